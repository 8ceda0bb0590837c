# What the system-wide units (installed by `cmake --install`) set, in the variables the templates
# (*.in) name; user.cmake is the variant for a user's own manager. --run-dir and --access come
# from the several-GPU and the access-control work (docs/operations.md).
set(MANAGER "system")
set(SYSTEMCTL "")
set(WANTED_BY multi-user.target)
# No instance by default: a GPU may be named by ordinal or by UUID, and two instances for one
# device would both claim its socket. `systemctl enable tally-server@0` enables the target too.
set(TARGET_WANTS "")

set(SERVER_INTRO [=[# Runs as the tally system user (sysusers.d/tally.conf); its socket is
# /run/tally/GPU-<uuid>.sock, which members of group tally may use.]=])
set(SERVER_ARGUMENTS
    "--run-dir=%t/tally --access=group:tally --config=${CMAKE_INSTALL_FULL_SYSCONFDIR}/tally/server.env")
# What both services run as and without, which each tolerates: the tally user; a read-only
# system but for the directories systemd makes for them; no home directories; a private /tmp
# (clients hand the server memory as file descriptors over its socket, never as files in /tmp);
# no kernel tunables, modules, logs, control groups, namespaces, real-time scheduling, set-uid
# files or other personality.
set(AS_TALLY [=[User=tally
Group=tally
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes]=])

set(SERVER_SETTINGS [=[# One directory for every instance's socket, kept while another instance still serves, which
# group tally may enter.
RuntimeDirectory=tally
RuntimeDirectoryMode=0750
RuntimeDirectoryPreserve=yes
# Settings: the --config file (TALLY_*=VALUE lines, tally-server --help); `systemctl reload
# tally-server@0` applies what can change while the server runs, and its log says what changed.
# Hardening (below): vendor libraries under /home need ProtectHome=read-only in an override.
# Not set: MemoryDenyWriteExecute (NVIDIA's driver compiles PTX to machine code at run time),
# PrivateDevices and DevicePolicy (the server opens /dev/nvidia*, and nvidia-uvm's device may
# appear after the server starts), RestrictAddressFamilies and SystemCallFilter (not yet tried
# with NVIDIA's driver).]=])
string(APPEND SERVER_SETTINGS "\n${AS_TALLY}")

set(EXPORTER_INTRO [=[# Serves every server whose socket is in /run/tally, as the tally user.]=])
set(EXPORTER_ARGUMENTS "--run-dir=%t/tally")
set(EXPORTER_SETTINGS [=[# It only reads the servers' sockets and answers HTTP: no devices, no code generated at run
# time.
PrivateDevices=yes
MemoryDenyWriteExecute=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6]=])
string(APPEND EXPORTER_SETTINGS "\n${AS_TALLY}")
