# access: tally-server --access decides which local users it serves, checked on the peer's
# credentials; clients of another user connect only to a server they were told to trust
# (TALLY_SERVER_UID); only the server's user changes it. Needs root, to create the users.
if (($(id -u) != 0)); then
  echo "SKIP: creating the test's users needs root"
  exit 77
fi
getent group tally-e2e > /dev/null || groupadd --system tally-e2e || fail "groupadd failed"
for user in tally-e2e-in tally-e2e-out; do
  getent passwd "$user" > /dev/null ||
    useradd --system --no-create-home --shell /usr/sbin/nologin "$user" || fail "useradd $user"
done
usermod -a -G tally-e2e tally-e2e-in || fail "usermod failed"
chmod 0755 "$work"  # the socket's directory: the other users must reach the socket
runuser -u tally-e2e-out -- test -x "$programs/vector_add" -a -x "$run_bin" || {
  echo "SKIP: the build tree is not readable by other users"
  exit 77
}

# as USER [VAR=VALUE...] -- COMMAND...: COMMAND as USER, with its supplementary groups, with a
# runtime directory of its own.
as() {
  local user=$1
  shift
  local vars=()
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  timeout 120 setpriv --reuid="$user" --regid="$user" --init-groups \
    env -u XDG_RUNTIME_DIR HOME=/tmp "${vars[@]}" "$@"
}
restart_server() {
  kill -TERM "$server_pid" && wait "$server_pid"
  server_pid=
  start_server "$@"
}
# expect_refused NAME WORD USER [VAR=VALUE...]: vector_add as USER fails, saying WORD.
expect_refused() {
  local name=$1 word=$2 user=$3
  shift 3
  if as "$user" "$@" -- "$run_bin" --server "$socket" -- "$programs/vector_add" \
    > "$work/$name.out" 2>&1; then
    fail "$name: $user was served: $(cat "$work/$name.out")"
  fi
  grep -qF -- "$word" "$work/$name.out" || fail "$name did not say '$word': $(cat "$work/$name.out")"
}
expect_served() {
  local name=$1 user=$2
  shift 2
  as "$user" "$@" -- "$run_bin" --server "$socket" -- "$programs/vector_add" \
    > "$work/$name.out" 2>&1 || fail "$name: $user was not served: $(cat "$work/$name.out")"
  grep -q "sums correct" "$work/$name.out" || fail "$name: $(cat "$work/$name.out")"
}

start_server  # --access user: root's alone; the socket is closed to others
expect_refused not_open "is not open to us" tally-e2e-in TALLY_SERVER_UID=0

restart_server --access group:tally-e2e
[[ $(stat -c '%a %G' "$socket") == "660 tally-e2e" ]] ||
  fail "the socket is $(stat -c '%a %G' "$socket"), not 660 tally-e2e"
expect_served member tally-e2e-in TALLY_SERVER_UID=root
expect_refused outsider "is not open to us" tally-e2e-out TALLY_SERVER_UID=0
# The server checks the credentials itself, whatever the socket file's mode.
chmod 0666 "$socket"
expect_refused credentials "serves members of group tally-e2e" tally-e2e-out TALLY_SERVER_UID=0
as tally-e2e-in TALLY_SERVER_UID=0 -- "$TALLY_CTL" status --server "$socket" > "$work/st.out" 2>&1 ||
  fail "a member's tally-ctl status failed: $(cat "$work/st.out")"
if as tally-e2e-in TALLY_SERVER_UID=0 -- "$TALLY_CTL" drain --server "$socket" \
  > "$work/drain.out" 2>&1; then
  fail "a member drained the server"
fi
grep -q "may not change this server" "$work/drain.out" || fail "drain: $(cat "$work/drain.out")"

restart_server --access any
# A client does not connect to a server of another user unless told to trust it.
expect_refused untrusted "runs as uid 0, not as us" tally-e2e-out
expect_served anyone tally-e2e-out TALLY_SERVER_UID=0
# tally-run --device and tally-ctl status --all look for servers in the run directory (here the
# test's, owned by root) and trust the same uid as the job.
as tally-e2e-out TALLY_SERVER_UID=0 TALLY_RUN_DIR="$work" -- "$run_bin" --device auto -- \
  "$programs/vector_add" > "$work/auto.out" 2>&1 || fail "--device auto as another user: $(cat "$work/auto.out")"
grep -q "sums correct" "$work/auto.out" || fail "--device auto: $(cat "$work/auto.out")"
as tally-e2e-out TALLY_SERVER_UID=0 TALLY_RUN_DIR="$work" -- "$TALLY_CTL" status --all \
  > "$work/all.out" 2>&1 || fail "status --all as another user: $(cat "$work/all.out")"
grep -q "^tally-server pid $server_pid" "$work/all.out" || fail "status --all: $(cat "$work/all.out")"
