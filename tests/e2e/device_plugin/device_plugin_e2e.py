"""tally-device-plugin end to end: a stand-in kubelet (stand_in_kubelet.py) and two emulated
GPUs' tally-servers. Registration of both resources; each plugin socket dialed as kubelets dial
it; GetDevicePluginOptions, ListAndWatch, GetPreferredAllocation, Allocate; the answer's mounts
and environment applied in a private mount namespace (unshare -m, as root: else skipped with
77) where an nvcc-built program runs through them, its priority and memory limit the grant's,
and while it works its server's high-priority busy time grows (the other server's stays 0) and
best-effort replicas are preferred on the other GPU;
the grant of a container the pod-resources API does not list revoked; registration again after
the kubelet's socket is made anew; a drained server's replicas Unhealthy on the stream; SIGTERM
keeping a running pod's grant; --preload ld-so-preload's file and mount.

Usage: device_plugin_e2e.py PLUGIN SERVER CTL CLIENT_LIBRARY PROGRAM_DIR PROTO_DIR"""
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from stand_in_kubelet import Kubelet, load_stubs, plugin_channels

SKIP = 77


def fail(message):
    raise AssertionError(message)


def wait_until(what, predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    fail("timed out waiting for " + what)


class Test:
    def __init__(self, argv, work):
        (self.plugin_bin, self.server_bin, self.ctl, self.client_library, self.programs,
         proto_dir) = argv
        self.work = work
        self.run_dir = os.path.join(work, "run")
        self.kubelet_dir = os.path.join(work, "kubelet")
        self.install_dir = os.path.join(work, "install")
        os.mkdir(self.run_dir, 0o700)
        os.mkdir(self.kubelet_dir)
        self.stubs = load_stubs(proto_dir, os.path.join(work, "stubs"))
        self.pb = self.stubs["device_plugin_pb2"]
        self.pb_grpc = self.stubs["device_plugin_pb2_grpc"]
        self.processes = []
        self.kubelet = Kubelet(self.stubs, self.kubelet_dir, os.path.join(work, "pod-resources.sock"))

    def start(self, args, log, **kwargs):
        process = subprocess.Popen(args, stderr=open(os.path.join(self.work, log), "w"), **kwargs)
        self.processes.append(process)
        return process

    def status(self, socket):
        out = subprocess.run([self.ctl, "status", "--json", "--server", socket], check=True,
                             capture_output=True, text=True, timeout=30).stdout
        return json.loads(out)

    def start_servers(self):
        env = dict(os.environ, TALLY_EMU_DEVICE_COUNT="2")
        for device in ("0", "1"):
            self.start([self.server_bin, "--emulate", "--device", device, "--run-dir",
                        self.run_dir, "--profile-cache",
                        os.path.join(self.work, f"profiles-{device}.json"),
                        "--code-cache", "none"],
                       f"server{device}.log", env=env)
        sockets = wait_until("two servers' sockets", lambda: sorted(
            os.path.join(self.run_dir, name) for name in os.listdir(self.run_dir)
            if name.endswith(".sock")) if len(os.listdir(self.run_dir)) >= 2 else None)
        self.servers = {self.status(socket)["device"]["uuid"]: socket for socket in sockets}
        self.device_memory = self.status(sockets[0])["device"]["total_memory_bytes"]

    def start_plugin(self, *flags):
        # An installation as the plugin mounts it: the shim where CMake installs it.
        library_dir = os.path.join(self.install_dir, "lib", "tally")
        os.makedirs(library_dir, exist_ok=True)
        shutil.copy(self.client_library, library_dir)
        self.plugin = self.start([
            self.plugin_bin, "--run-dir", self.run_dir, "--kubelet-dir", self.kubelet_dir,
            "--install-dir", self.install_dir, "--pod-resources-socket",
            self.kubelet.pod_resources_socket, "--poll-interval", "0.2", "--cleanup-interval",
            "0.3", *flags], "plugin.log")

    def stop_plugin(self):
        """SIGTERM: a clean exit, its files in the kubelet's directory gone."""
        self.plugin.send_signal(signal.SIGTERM)
        if self.plugin.wait(10) != 0:
            fail(f"the plugin exited with {self.plugin.returncode}")
        left = [n for n in os.listdir(self.kubelet_dir) if n.startswith("tally-")]
        if left:
            fail(f"the plugin left {left}")

    def check_registrations(self):
        """Both resources register, each with its own socket; returns {resource: socket}."""
        sockets = {}
        for _ in range(2):
            request = self.kubelet.registration()
            if request.version != "v1beta1" or not request.options.get_preferred_allocation_available:
                fail(f"registration {request}")
            sockets[request.resource_name] = os.path.join(self.kubelet_dir, request.endpoint)
        expected = {"tally.dev/gpu-high": "tally-gpu-high.sock",
                    "tally.dev/gpu-best-effort": "tally-gpu-best-effort.sock"}
        if {name: os.path.basename(path) for name, path in sockets.items()} != expected:
            fail(f"registered {sockets}")
        return sockets

    def stubs_of(self, socket):
        """The DevicePlugin stub on each :authority form, each answering GetDevicePluginOptions."""
        stubs = {}
        for form, channel in plugin_channels(socket).items():
            stub = self.pb_grpc.DevicePluginStub(channel)
            options = stub.GetDevicePluginOptions(self.pb.Empty(), timeout=5)
            if not options.get_preferred_allocation_available or options.pre_start_required:
                fail(f"options on {socket} ({form}): {options}")
            stubs[form] = stub
        return stubs

    def watch(self, stub):
        """ListAndWatch in a thread; its responses (as {id: health}) in the queue returned."""
        responses = queue.Queue()
        stream = stub.ListAndWatch(self.pb.Empty())

        def read():
            try:
                for response in stream:
                    responses.put({d.ID: d.health for d in response.devices})
            except Exception:  # cancelled at the end, or the plugin's restart
                pass
        threading.Thread(target=read, daemon=True).start()
        return responses, stream

    def allocate(self, stub, ids):
        request = self.pb.AllocateRequest()
        request.container_requests.add(devices_ids=ids)
        return stub.Allocate(request, timeout=10).container_responses[0]

    def preferred(self, stub, available, size):
        request = self.pb.PreferredAllocationRequest()
        request.container_requests.add(available_deviceIDs=available, allocation_size=size)
        return list(stub.GetPreferredAllocation(request, timeout=5).container_responses[0].deviceIDs)

    def grant_of(self, gpu, name):
        grants = [g for g in self.status(self.servers[gpu])["grants"] if g["name"] == name]
        return grants[0] if grants else None

    def run_in_container(self, response, name):
        """The program in a private mount namespace with the answer's mounts (over tmpfs /run and
        /opt, so that nothing is made on the host) and only the answer's environment."""
        script = ["set -e", "mount --make-rprivate /", "mount -t tmpfs tmpfs /run",
                  "mount -t tmpfs tmpfs /opt"]
        for mount in response.mounts:
            if not mount.read_only:
                fail(f"mount {mount} is not read-only")
            script += [f"mkdir -p '{mount.container_path}'",
                       f"mount --bind '{mount.host_path}' '{mount.container_path}'",
                       f"mount -o remount,bind,ro '{mount.container_path}'"]
        script.append('exec "$@"')
        # The mounts are made with the host's environment, the program runs with the answer's.
        env = ["env", "-i", "PATH=/usr/bin:/bin"] + [f"{k}={v}" for k, v in response.envs.items()]
        # Busy for a while after "go": rounds of a kernel, for the servers' busy time.
        program = [os.path.join(self.programs, "priority_jobs"), "train", "--kernels", "2",
                   "--blocks", "2", "--work", "10", "--duration-ms", "1000", "--handshake"]
        return self.start(["unshare", "-m", "sh", "-c", "\n".join(script), "container", *env,
                           *program], f"{name}.log", stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)

    def await_line(self, job, word):
        for line in job.stdout:
            if line.strip() == word:
                return
        fail(f"the program in the container never said {word}: " +
             open(os.path.join(self.work, "container.log")).read())

    def check_container(self, gpu, grant, response, while_running):
        job = self.run_in_container(response, "container")
        self.await_line(job, "READY")
        clients = self.status(self.servers[gpu])["clients"]
        mine = [c for c in clients if c["grant"] == grant["name"]]
        if len(mine) != 1:
            fail(f"no client of grant {grant['name']}: {clients}")
        if (mine[0]["priority"], mine[0]["memory_limit_bytes"]) != (
                grant["priority"], grant["memory_limit_bytes"]):
            fail(f"the client {mine[0]} has not the grant's terms {grant}")
        job.stdin.write("go\n")
        job.stdin.flush()
        while_running()
        self.await_line(job, "FINISHED")
        job.stdin.write("bye\n")
        job.stdin.close()
        if job.wait(30) != 0:
            fail("the program failed: " + open(os.path.join(self.work, "container.log")).read())

    def run(self):
        if os.geteuid() != 0 or shutil.which("unshare") is None:
            print("skipped: applying the mounts needs root and unshare")
            return SKIP
        self.start_servers()
        self.kubelet.start()
        self.start_plugin()
        sockets = self.check_registrations()
        high = self.stubs_of(sockets["tally.dev/gpu-high"])
        best_effort = self.stubs_of(sockets["tally.dev/gpu-best-effort"])

        # ListAndWatch: both GPUs' replicas, healthy.
        high_devices = self.watch(high["localhost"])[0].get(timeout=5)
        best_devices, _ = self.watch(best_effort["path"])
        best_devices = best_devices.get(timeout=5)
        gpus = sorted(self.servers)
        if sorted(high_devices) != sorted(f"{g}-high-{n}" for g in gpus for n in range(2)):
            fail(f"gpu-high devices {high_devices}")
        if len(best_devices) != 8 or set(best_devices.values()) != {"Healthy"}:
            fail(f"gpu-best-effort devices {best_devices}")

        # A gpu-high container of one replica: preferred, allocated, run, checked.
        chosen = self.preferred(high["path"], sorted(high_devices), 1)
        gpu = chosen[0].rsplit("-high-", 1)[0]
        self.kubelet.pods = [{"namespace": "default", "name": "server", "containers": [
            {"name": "main", "devices": [{"resource": "tally.dev/gpu-high", "ids": chosen}]}]}]
        response = self.allocate(high["localhost"], chosen)
        grant = self.grant_of(gpu, chosen[0])
        if grant is None or grant["priority"] != 1 or \
                grant["memory_limit_bytes"] != self.device_memory // 2:
            fail(f"the gpu-high grant: {grant}")
        if response.envs["TALLY_SERVER"] != "/run/tally/server.sock":
            fail(f"the answer's environment {dict(response.envs)}")
        # While it works, its server counts high-priority busy time (the other's does not), and
        # best-effort replicas are preferred on the other GPU, once the plugin's poll saw it.
        other_gpu = [g for g in gpus if g != gpu][0]

        def while_running():
            wait_until("high-priority busy time on the client's GPU", lambda: self.status(
                self.servers[gpu])["device"]["busy_ns"]["high"] > 0, timeout=5)
            wait_until("best-effort replicas preferred away from the high-priority client",
                       lambda: all(i.startswith(other_gpu) for i in self.preferred(
                           best_effort["path"], sorted(best_devices), 2)), timeout=5)
            idle = self.status(self.servers[other_gpu])["device"]["busy_ns"]["high"]
            if idle != 0:
                fail(f"high-priority busy time {idle} ns on the GPU without such a client")
        self.check_container(gpu, grant, response, while_running)

        # Two best-effort replicas, on one GPU; their grant, which no pod lists, is revoked by
        # the clean-up, the listed container's is kept.
        two = self.preferred(best_effort["localhost"], sorted(best_devices), 2)
        if len({i.rsplit("-best-effort-", 1)[0] for i in two}) != 1:
            fail(f"preferred two best-effort replicas on two GPUs: {two}")
        other = two[0].rsplit("-best-effort-", 1)[0]
        self.allocate(best_effort["path"], two)
        grant = self.grant_of(other, min(two))
        if grant is None or grant["priority"] != 0 or \
                grant["memory_limit_bytes"] != 2 * (self.device_memory // 4):
            fail(f"the gpu-best-effort grant: {grant}")
        wait_until("the orphaned grant's revocation", lambda: self.grant_of(other, min(two)) is None)
        if self.grant_of(gpu, chosen[0]) is None:
            fail("the clean-up revoked the grant of a container that the kubelet lists")
        try:
            self.allocate(high["path"], [f"{gpus[0]}-high-0", f"{gpus[1]}-high-1"])
            fail("replicas on two GPUs were allocated")
        except Exception as error:  # grpc.RpcError
            if "two GPUs" not in str(error):
                raise

        # The kubelet restarts: its socket and the plugin's go, the plugin registers again.
        self.kubelet.stop()
        self.kubelet.start()
        sockets = self.check_registrations()
        best_effort = self.stubs_of(sockets["tally.dev/gpu-best-effort"])

        # A drained server's replicas turn Unhealthy on the stream, the other GPU's stay healthy.
        devices, stream = self.watch(best_effort["localhost"])
        if set(devices.get(timeout=5).values()) != {"Healthy"}:
            fail("not all healthy after the restart")
        drained = [g for g in gpus if g != gpu][0]
        subprocess.run([self.ctl, "drain", "--server", self.servers[drained]], check=True,
                       capture_output=True, timeout=30)
        update = devices.get(timeout=5)
        expected = {f"{g}-best-effort-{n}": "Unhealthy" if g == drained else "Healthy"
                    for g in gpus for n in range(4)}
        if update != expected:
            fail(f"after the drain: {update}")
        stream.cancel()

        # SIGTERM: the running pod's grant is kept.
        self.stop_plugin()
        if self.grant_of(gpu, chosen[0]) is None:
            fail("the plugin's exit revoked a running pod's grant")

        # --preload ld-so-preload: a file naming the shim, mounted at /etc/ld.so.preload.
        self.start_plugin("--preload", "ld-so-preload")
        sockets = self.check_registrations()
        high = self.stubs_of(sockets["tally.dev/gpu-high"])
        response = self.allocate(high["path"], [f"{gpu}-high-1"])
        mounts = {m.container_path: m.host_path for m in response.mounts}
        preload = mounts.get("/etc/ld.so.preload")
        if preload is None or "LD_PRELOAD" in response.envs:
            fail(f"ld-so-preload's answer: {response}")
        if open(preload).read() != "/opt/tally/lib/tally/libtally_client.so\n":
            fail(f"{preload} holds {open(preload).read()!r}")
        self.stop_plugin()
        print("device plugin: registered, served, granted, re-registered, drained, stopped")
        return 0

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.kill()
                process.wait(10)
        if self.kubelet.server is not None:
            self.kubelet.server.stop(grace=None)


def main():
    work = tempfile.mkdtemp(prefix="tally-device-plugin-")
    test = None
    try:
        test = Test(sys.argv[1:], work)
        return test.run()
    except Exception as error:  # a failed check, or an RPC's error
        print("FAIL:", repr(error), file=sys.stderr)
        for log in ("plugin.log", "server0.log", "server1.log"):
            path = os.path.join(work, log)
            if os.path.exists(path):
                print(f"--- {log}\n" + open(path).read(), file=sys.stderr)
        return 1
    finally:
        if test is not None:
            test.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
