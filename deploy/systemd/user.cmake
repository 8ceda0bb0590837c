# What the units for a user's own manager (systemctl --user) set, in the variables the templates
# (*.in) name; system.cmake is the system-wide variant.
set(MANAGER "user's session")
set(SYSTEMCTL "--user ")
set(WANTED_BY default.target)
set(TARGET_WANTS "Wants=tally-server@0.service")

set(SERVER_INTRO [=[# Its socket is $XDG_RUNTIME_DIR/tally/GPU-<uuid>.sock, where jobs find it:
#   tally-run -- ./job                  (the only server there)
#   tally-run --device auto -- ./job    (one server per GPU: the rule of tally-run --help)
# The server serves its own user only.]=])
set(SERVER_ARGUMENTS "--run-dir=%t/tally")
set(SERVER_SETTINGS [=[# Every instance's socket in one folder, kept while any of them runs.
RuntimeDirectory=tally
RuntimeDirectoryMode=0700
RuntimeDirectoryPreserve=yes
# Settings in a file: `systemctl --user edit tally-server@0` and add
#   Environment=TALLY_CONFIG=%E/tally/server.env
# (TALLY_*=VALUE lines, tally-server --help); `systemctl --user reload tally-server@0` then
# applies what can change while the server runs, and its log says what changed.]=])

set(EXPORTER_INTRO [=[# Serves every server whose socket is in $XDG_RUNTIME_DIR/tally, listed at each scrape.]=])
set(EXPORTER_ARGUMENTS "--run-dir=%t/tally")
set(EXPORTER_SETTINGS "")
