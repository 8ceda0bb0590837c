# What the units for a user's own manager (systemctl --user) set, in the variables the templates
# (*.in) name; system.cmake is the system-wide variant.
set(MANAGER "user's session")
set(SYSTEMCTL "--user ")
set(WANTED_BY default.target)
set(TARGET_WANTS "Wants=tally-server@0.service")

set(SERVER_INTRO [=[# Jobs reach it with
#   TALLY_SERVER=$XDG_RUNTIME_DIR/tally-gpu0/server.sock tally-run -- ./job
# (tally-run --server PATH says the same). The server serves its own user only.]=])
set(SERVER_ARGUMENTS "--socket=%t/tally-gpu%i/server.sock")
set(SERVER_SETTINGS [=[RuntimeDirectory=tally-gpu%i
RuntimeDirectoryMode=0700
# Settings in a file: `systemctl --user edit tally-server@0` and add
#   Environment=TALLY_CONFIG=%E/tally/server.env
# (TALLY_*=VALUE lines, tally-server --help); `systemctl --user reload tally-server@0` then
# applies what can change while the server runs, and its log says what changed.]=])

set(EXPORTER_INTRO [=[# Serves GPU 0's server; for more, add --server PATH per server with
# `systemctl --user edit tally-exporter`.]=])
set(EXPORTER_ARGUMENTS "--server=%t/tally-gpu0/server.sock")
set(EXPORTER_SETTINGS "")
