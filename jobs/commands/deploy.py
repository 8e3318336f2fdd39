"""`semantica deploy render`: KubeRay manifests (a kustomize base) from conf/serve.yaml and a values file."""

from __future__ import annotations

import argparse
from pathlib import Path

from jobs.cli import print_json

REPO_ROOT = Path(__file__).resolve().parents[2]


def register(sub: argparse._SubParsersAction) -> None:
    deploy = sub.add_parser("deploy", help="render Kubernetes manifests (KubeRay RayService + nightly RayCronJob)",
                            description="Render a kustomize base for a Kubernetes cluster with KubeRay: a RayService "
                                        "whose Serve config is generated from conf/serve.yaml, a nightly index-batch "
                                        "RayCronJob, the index volume. See docs/deploy.md.")
    actions = deploy.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    render = actions.add_parser("render", help="write the manifests for one values file")
    render.add_argument("--values", default=str(REPO_ROOT / "deploy" / "values.yaml"), metavar="FILE",
                        help="values (image, replicas, token secret, index volume, Memgraph address); "
                             "default deploy/values.yaml")
    render.add_argument("--serve-config", default=str(REPO_ROOT / "conf" / "serve.yaml"), metavar="FILE",
                        help="the Ray Serve config the RayService runs (default conf/serve.yaml)")
    render.add_argument("--cluster-config", default=str(REPO_ROOT / "conf" / "cluster.yaml"), metavar="FILE",
                        help="the Semantica cluster config: each Serve replica's CPUs (serve.replica_num_cpus); "
                             "default conf/cluster.yaml")
    render.add_argument("--out", required=True, metavar="DIR", help="directory for the kustomize base")
    render.add_argument("--json", action="store_true", help="print the written files as JSON")
    render.set_defaults(handler=run_render)


def run_render(args: argparse.Namespace) -> int:
    import yaml

    from jobs.deploy import DeployError, load_values, render, write
    from semantica.config import load_config

    serve_file = Path(args.serve_config)
    if not serve_file.is_file():
        raise DeployError(f"serve config {serve_file} does not exist")
    cluster = load_config(args.cluster_config, environ={})
    written = write(render(yaml.safe_load(serve_file.read_text()) or {}, load_values(args.values),
                           cluster.serve.replica_num_cpus), args.out)
    if args.json:
        print_json([str(p) for p in written])
    else:
        for path in written:
            print(path)
        print(f"apply with: kubectl apply -k {args.out}")
    return 0
