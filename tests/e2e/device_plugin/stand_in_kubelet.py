"""A stand-in for the kubelet's side of the device plugin API: the Registration service on
kubelet.sock and the pod-resources service, with Python stubs generated from
tools/kubelet_api/*.proto (Debian's grpcio, /usr/bin/python3)."""
import importlib
import os
import queue
import subprocess
import sys
from concurrent import futures

import grpc


def load_stubs(proto_dir, out_dir):
    """Generates the Python stubs of the kubelet's protos into out_dir and imports them."""
    plugin = subprocess.run(["sh", "-c", "command -v grpc_python_plugin"], check=True,
                            capture_output=True, text=True).stdout.strip()
    os.makedirs(out_dir, exist_ok=True)
    protos = [os.path.join(proto_dir, name) for name in ("device_plugin.proto",
                                                         "pod_resources.proto")]
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={out_dir}",
                    f"--grpc_out={out_dir}", f"--plugin=protoc-gen-grpc={plugin}", *protos],
                   check=True)
    sys.path.insert(0, out_dir)
    # tests/e2e: fake_pod_resources.py's answer to List (tally-exporter's test) is ours too.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return {name: importlib.import_module(name) for name in (
        "device_plugin_pb2", "device_plugin_pb2_grpc", "pod_resources_pb2",
        "pod_resources_pb2_grpc")}


class Kubelet:
    """Serves Registration on DIR/kubelet.sock (every request lands in `registrations`) and
    PodResourcesLister on `pod_resources_socket` (answering `pods`, in fake_pod_resources.py's
    form)."""

    def __init__(self, stubs, directory, pod_resources_socket):
        self.stubs = stubs
        self.directory = directory
        self.pod_resources_socket = pod_resources_socket
        self.registrations = queue.Queue()
        self.pods = []
        self.server = None

    def start(self):
        pb, pb_grpc = self.stubs["device_plugin_pb2"], self.stubs["device_plugin_pb2_grpc"]
        pr_grpc = self.stubs["pod_resources_pb2_grpc"]
        import fake_pod_resources  # after load_stubs: it imports the stubs
        kubelet = self

        class Registration(pb_grpc.RegistrationServicer):
            def Register(self, request, context):
                kubelet.registrations.put(request)
                return pb.Empty()

        class Lister(pr_grpc.PodResourcesListerServicer):
            def List(self, request, context):
                return fake_pod_resources.response_of(kubelet.pods)

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_RegistrationServicer_to_server(Registration(), self.server)
        pr_grpc.add_PodResourcesListerServicer_to_server(Lister(), self.server)
        self.server.add_insecure_port("unix://" + os.path.join(self.directory, "kubelet.sock"))
        self.server.add_insecure_port("unix://" + self.pod_resources_socket)
        self.server.start()

    def stop(self):
        """As the kubelet at its restart: its socket goes, and the plugins' sockets with it."""
        self.server.stop(grace=None).wait(5)
        for name in os.listdir(self.directory):
            if name.endswith(".sock"):
                os.unlink(os.path.join(self.directory, name))

    def registration(self, timeout=10):
        try:
            return self.registrations.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no registration in %s s" % timeout) from None


def plugin_channels(socket_path):
    """The plugin's socket as kubelets dial it: a unix:// target, whose :authority is
    "localhost" (grpc.NewClient("unix://...") in newer kubelets), and the socket's path as the
    :authority (grpc.DialContext(path) with a dialer of its own in older ones)."""
    target = "unix://" + socket_path
    return {"localhost": grpc.insecure_channel(target),
            "path": grpc.insecure_channel(target, options=[("grpc.default_authority",
                                                            socket_path)])}
