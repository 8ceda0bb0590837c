#!/usr/bin/python3
"""A stand-in for the kubelet's pod-resources API (List), for tally-exporter's pod labels.

  fake_pod_resources.py STUBS SOCKET PODS

STUBS: a folder with the Python stubs of tools/kubelet_api/pod_resources.proto (protoc's
pod_resources_pb2.py and pod_resources_pb2_grpc.py). SOCKET: the unix socket to serve on.
PODS: JSON, a list of {"namespace", "name", "containers": [{"name", "devices": [{"resource",
"ids"}]}]}, answered to every List. Prints READY once it serves; runs until killed.
Needs Debian's grpc (/usr/bin/python3).
"""
import json
import sys
from concurrent import futures

import grpc

sys.path.insert(0, sys.argv[1])
import pod_resources_pb2  # noqa: E402  (generated into STUBS at test time)
import pod_resources_pb2_grpc  # noqa: E402


def response_of(pods):
    response = pod_resources_pb2.ListPodResourcesResponse()
    for pod in pods:
        entry = response.pod_resources.add(name=pod["name"], namespace=pod["namespace"])
        for container in pod["containers"]:
            resources = entry.containers.add(name=container["name"])
            for devices in container["devices"]:
                resources.devices.add(resource_name=devices["resource"], device_ids=devices["ids"])
    return response


class Lister(pod_resources_pb2_grpc.PodResourcesListerServicer):
    def __init__(self, response):
        self.response = response

    def List(self, request, context):
        return self.response


def main():
    _, _, socket_path, pods = sys.argv
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pod_resources_pb2_grpc.add_PodResourcesListerServicer_to_server(
        Lister(response_of(json.loads(pods))), server)
    if server.add_insecure_port("unix:" + socket_path) == 0:
        sys.exit(f"cannot serve on {socket_path}")
    server.start()
    print("READY", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
