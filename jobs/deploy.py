"""Kubernetes manifests for Semantica, rendered from conf/serve.yaml and one values file.

`semantica deploy render --values deploy/values.yaml --out DIR` writes a kustomize base:

- `rayservice.yaml`: a KubeRay RayService running `serving.ray.app:build_app`; its `serveConfigV2` IS
  conf/serve.yaml (same applications and deployments) with the values applied (bind address, config
  overrides, replicas), so the Serve config a cluster runs never drifts from the one `semantica serve` runs;
- `rayjob-index-batch.yaml`: a RayJob running `semantica index-batch` on a manifest;
- `cronjob-index-batch.yaml` (+ its ServiceAccount, Role, RoleBinding): a CronJob that submits that RayJob
  nightly (KubeRay has no schedule of its own);
- `pvc.yaml`: the index volume every pod mounts (index root, embedding cache, feedback);
- `kustomization.yaml` listing them, with the namespace.

The token Secret is referenced by name, never rendered: create it with kubectl (docs/deploy.md).
"""

from __future__ import annotations

import copy
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

RAY_API = "ray.io/v1"
APP_IMPORT_PATH = "serving.ray.app:build_app"
TOKEN_MOUNT = "/var/run/semantica"
TOKEN_FILE_NAME = "serve-token"
CONFIG_IN_IMAGE = "conf/cluster.yaml"
SERVE_PORT = 8000
WORKDIR = "/app"


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (serveConfigV2, the RayJob in its ConfigMap) as readable `|` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False)


class DeployError(ValueError):
    """The values file or serve config cannot be rendered; the message says which key to fix."""


@dataclass
class Resources:
    cpu: str = "2"
    memory: str = "8Gi"
    gpu: int = 0


@dataclass
class Values:
    """deploy/values.yaml: everything a platform team sets for its cluster."""

    name: str = "semantica"
    namespace: str = "semantica"
    image: str = "semantica:0.1.0"
    image_pull_policy: str = "IfNotPresent"
    ray_version: str = "2.60.0"
    token_secret: str = "semantica-token"  # a Secret with key `token`: the bearer token clients send
    index_volume_claim: str = "semantica-index"
    index_volume_size: str = "100Gi"
    index_volume_storage_class: str = ""
    index_mount: str = "/data"
    memgraph_uri: str = ""  # e.g. bolt://memgraph.graph:7687; empty = the embedded graph store
    otlp_endpoint: str = ""  # e.g. http://otel-collector:4318/v1/traces; empty = tracing off
    ingress_replicas: int = 2
    replicas: dict[str, int] = field(default_factory=dict)  # deployment name -> num_replicas (overrides serve.yaml)
    head: Resources = field(default_factory=Resources)
    workers: Resources = field(default_factory=lambda: Resources(cpu="4", memory="16Gi"))
    worker_replicas: int = 2
    worker_max_replicas: int = 4
    index_batch_schedule: str = "0 2 * * *"
    index_batch_manifest: str = "/data/repos.yaml"  # on the index volume
    extra_overrides: list[str] = field(default_factory=list)  # more `section.field=value` config overrides


def load_values(path: str | Path) -> Values:
    file = Path(path)
    if not file.is_file():
        raise DeployError(f"values file {path} does not exist")
    raw = yaml.safe_load(file.read_text()) or {}
    if not isinstance(raw, dict):
        raise DeployError(f"{path}: expected a mapping of values")
    known = set(Values.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise DeployError(f"{path}: unknown value(s) {unknown}; known: {sorted(known)}")
    values = Values(**{k: v for k, v in raw.items() if k not in ("head", "workers")})
    for group in ("head", "workers"):
        if group in raw:
            given = raw[group] or {}
            bad = sorted(set(given) - set(Resources.__dataclass_fields__))
            if bad:
                raise DeployError(f"{path}: {group}: unknown key(s) {bad}; known: cpu, memory, gpu")
            setattr(values, group, Resources(**{k: (str(v) if k != "gpu" else int(v)) for k, v in given.items()}))
    return values


def config_overrides(values: Values) -> list[str]:
    """The Semantica config overrides every pod runs with (the shared volume, the token, the graph store)."""
    data = values.index_mount.rstrip("/")
    overrides = [
        f"paths.index_root={data}/index", f"paths.cache_dir={data}/cache", f"serve.feedback_dir={data}/feedback",
        "serve.host=0.0.0.0", f"serve.port={SERVE_PORT}", "auth.mode=required",
        f"auth.token_file={TOKEN_MOUNT}/{TOKEN_FILE_NAME}", "auth.allowed_hosts=['*']",
    ]
    if values.memgraph_uri:
        overrides += ["graph.store=memgraph", f"graph.memgraph_uri={values.memgraph_uri}"]
    else:
        overrides += ["graph.store=embedded"]
    if values.otlp_endpoint:
        overrides.append(f"observability.otlp_endpoint={values.otlp_endpoint}")
    return overrides + list(values.extra_overrides)


def serve_config(serve_yaml: dict[str, Any], values: Values) -> dict[str, Any]:
    """conf/serve.yaml for the cluster: bound on every interface, the cluster config and overrides, replicas."""
    config = copy.deepcopy(serve_yaml)
    apps = config.get("applications") or []
    semantica = [a for a in apps if a.get("import_path") == APP_IMPORT_PATH]
    if len(semantica) != 1:
        raise DeployError(f"serve config: expected one application with import_path {APP_IMPORT_PATH}")
    config["proxy_location"] = "EveryNode"
    config["http_options"] = {**(config.get("http_options") or {}), "host": "0.0.0.0", "port": SERVE_PORT}
    app = semantica[0]
    app["args"] = {**(app.get("args") or {}), "config": CONFIG_IN_IMAGE,
                   "overrides": [*(app.get("args") or {}).get("overrides", []), *config_overrides(values)],
                   "serve_config": "conf/serve.yaml"}
    wanted = {"Ingress": values.ingress_replicas, **values.replicas}
    names = {d["name"] for d in app.get("deployments") or []}
    unknown = sorted(set(wanted) - names)
    if unknown:
        raise DeployError(f"values.replicas names no deployment of serve.yaml: {unknown} (known: {sorted(names)})")
    for deployment in app.get("deployments") or []:
        if deployment["name"] in wanted:
            deployment.pop("autoscaling_config", None)
            deployment["num_replicas"] = int(wanted[deployment["name"]])
    return config


def _container(values: Values, name: str, resources: Resources, ports: bool) -> dict[str, Any]:
    limits: dict[str, Any] = {"cpu": resources.cpu, "memory": resources.memory}
    if resources.gpu:
        limits["nvidia.com/gpu"] = resources.gpu
    container: dict[str, Any] = {
        "name": name, "image": values.image, "imagePullPolicy": values.image_pull_policy,
        "workingDir": WORKDIR, "env": [{"name": "SEMANTICA_CONFIG", "value": CONFIG_IN_IMAGE}],
        "resources": {"limits": limits, "requests": dict(limits)},
        "volumeMounts": [{"name": "index", "mountPath": values.index_mount},
                         {"name": "token", "mountPath": TOKEN_MOUNT, "readOnly": True}],
    }
    if ports:
        container["ports"] = [{"containerPort": 6379, "name": "gcs-server"},
                              {"containerPort": 8265, "name": "dashboard"},
                              {"containerPort": 10001, "name": "client"},
                              {"containerPort": SERVE_PORT, "name": "serve"}]
    return container


def _volumes(values: Values) -> list[dict[str, Any]]:
    return [{"name": "index", "persistentVolumeClaim": {"claimName": values.index_volume_claim}},
            {"name": "token", "secret": {"secretName": values.token_secret,
                                          "items": [{"key": "token", "path": TOKEN_FILE_NAME}]}}]


def ray_cluster_spec(values: Values, serve: bool) -> dict[str, Any]:
    head = {"rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0"},
            "template": {"spec": {"containers": [_container(values, "ray-head", values.head, True)],
                                  "volumes": _volumes(values)}}}
    worker = {"groupName": "workers", "replicas": values.worker_replicas, "minReplicas": 1,
              "maxReplicas": max(values.worker_max_replicas, values.worker_replicas), "rayStartParams": {},
              "template": {"spec": {"containers": [_container(values, "ray-worker", values.workers, False)],
                                    "volumes": _volumes(values)}}}
    spec: dict[str, Any] = {"rayVersion": values.ray_version, "headGroupSpec": head, "workerGroupSpecs": [worker]}
    if serve:
        spec["enableInTreeAutoscaling"] = True
    return spec


def render(serve_yaml: dict[str, Any], values: Values) -> dict[str, list[dict[str, Any]]]:
    """File name -> the Kubernetes objects it holds."""
    labels = {"app.kubernetes.io/name": "semantica", "app.kubernetes.io/instance": values.name}
    service = {
        "apiVersion": RAY_API, "kind": "RayService", "metadata": {"name": values.name, "labels": labels},
        "spec": {"serveConfigV2": dump(serve_config(serve_yaml, values)),
                 "rayClusterConfig": ray_cluster_spec(values, serve=True)},
    }
    entrypoint = (f"semantica index-batch --manifest {values.index_batch_manifest} --ray-address auto --json "
                  + " ".join(f"--set {shlex.quote(o)}" for o in config_overrides(values)))
    job_name = f"{values.name}-index-batch"
    job = {
        "apiVersion": RAY_API, "kind": "RayJob", "metadata": {"name": job_name, "labels": labels},
        "spec": {"entrypoint": entrypoint, "shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 3600,
                 "rayClusterSpec": ray_cluster_spec(values, serve=False)},
    }
    account = f"{values.name}-index-batch-submitter"
    rbac = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": account, "labels": labels},
         "rules": [{"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": ["create", "delete", "get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": account, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
         "subjects": [{"kind": "ServiceAccount", "name": account}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": job_name, "labels": labels},
         "data": {"rayjob.yaml": dump(job)}},
    ]
    cron = {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": job_name, "labels": labels},
        "spec": {"schedule": values.index_batch_schedule, "concurrencyPolicy": "Forbid",
                 "jobTemplate": {"spec": {"backoffLimit": 1, "template": {"spec": {
                     "serviceAccountName": account, "restartPolicy": "Never",
                     "containers": [{"name": "submit", "image": "bitnami/kubectl:1.32",
                                     "command": ["sh", "-c", f"kubectl delete rayjob {job_name} --ignore-not-found && "
                                                             "kubectl create -f /rayjob/rayjob.yaml"],
                                     "volumeMounts": [{"name": "rayjob", "mountPath": "/rayjob"}]}],
                     "volumes": [{"name": "rayjob", "configMap": {"name": job_name}}]}}}}},
    }
    claim: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": values.index_volume_claim, "labels": labels},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": values.index_volume_size}}},
    }
    if values.index_volume_storage_class:
        claim["spec"]["storageClassName"] = values.index_volume_storage_class
    files = {"rayservice.yaml": [service], "rayjob-index-batch.yaml": [job],
             "cronjob-index-batch.yaml": [*rbac, cron], "pvc.yaml": [claim]}
    files["kustomization.yaml"] = [{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                                    "namespace": values.namespace,
                                    "resources": sorted(n for n in files if n != "kustomization.yaml")}]
    return files


def write(files: dict[str, list[dict[str, Any]]], out: str | Path) -> list[Path]:
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, objects in files.items():
        path = target / name
        path.write_text("# generated by `semantica deploy render`: edit deploy/values.yaml or conf/serve.yaml instead\n"
                        + yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False))
        written.append(path)
    return written
