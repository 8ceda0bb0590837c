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
# What both services, unprivileged, can do without: kernel tunables, modules, logs, control groups,
# namespaces, real-time scheduling, set-uid files, another personality.
set(UNPRIVILEGED [=[ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes]=])

set(SERVER_SETTINGS [=[User=tally
Group=tally
# One directory for every instance's socket, kept while another instance still serves, which
# group tally may enter.
RuntimeDirectory=tally
RuntimeDirectoryMode=0750
RuntimeDirectoryPreserve=yes
# Settings: the --config file (TALLY_*=VALUE lines, tally-server --help); `systemctl reload
# tally-server@0` applies what can change while the server runs, and its log says what changed.
# Hardening the server tolerates: it writes only its run and cache directories (ProtectSystem)
# and reads no home directory (vendor libraries under /home need ProtectHome=read-only in an
# override); clients hand it memory as file descriptors over the socket, never files in /tmp
# (PrivateTmp).
# Not set: MemoryDenyWriteExecute (NVIDIA's driver compiles PTX to machine code at run time),
# PrivateDevices and DevicePolicy (the server opens /dev/nvidia*, and nvidia-uvm's device may
# appear after the server starts), RestrictAddressFamilies and SystemCallFilter (not yet tried
# with NVIDIA's driver).
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes]=])
string(APPEND SERVER_SETTINGS "\n${UNPRIVILEGED}")

set(EXPORTER_INTRO [=[# Serves every server whose socket is in /run/tally, as the tally user.]=])
set(EXPORTER_ARGUMENTS "--run-dir=%t/tally")
set(EXPORTER_SETTINGS [=[User=tally
Group=tally
# It only reads the servers' sockets and answers HTTP: no devices, no files to write, no code
# generated at run time.
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
MemoryDenyWriteExecute=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6]=])
string(APPEND EXPORTER_SETTINGS "\n${UNPRIVILEGED}")
