"""Kubernetes manifests for Semantica, rendered from conf/serve.yaml and one values file.

`semantica deploy render --values deploy/values.yaml --out DIR` writes a kustomize base:

- `rayservice.yaml`: a KubeRay RayService running `serving.ray.app:build_app`; its `serveConfigV2` IS
  conf/serve.yaml (same applications and deployments) with the values applied (bind address, config
  overrides, replicas), so the Serve config a cluster runs never drifts from the one `semantica serve` runs;
- `raycronjob-index-batch.yaml`: a KubeRay RayCronJob running `semantica index-batch` on a manifest on the
  schedule (the operator creates each RayJob: no kubectl image, no RBAC);
- `pvc.yaml`: the index volume every pod mounts (index root, embedding cache, feedback);
- `kustomization.yaml` listing them, with the namespace. Applying it starts no build;
- `first-index/`: a kustomization of one RayJob of the same build, for the first index when asked
  (`kubectl apply -k DIR/first-index`).

Every Ray cluster has Ray token authentication on (`authOptions`) and its dashboard on loopback; the
RayService's cluster takes GCS fault tolerance (an external Redis) when `gcs_redis_address` is set. Serve
replicas ask for the CPUs of the cluster config (`serve.replica_num_cpus` of conf/cluster.yaml), not the
laptop's fractions in conf/serve.yaml.

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
DASHBOARD_HOST = "127.0.0.1"  # reach it with kubectl port-forward; Ray token auth guards the rest
UPGRADE_STRATEGIES = ("NewCluster", "NewClusterWithIncrementalUpgrade", "None")  # KubeRay's RayService types
FIRST_INDEX_DIR = "first-index"
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
    index_batch_time_zone: str = "Etc/UTC"
    index_batch_suspend: bool = False  # true: the RayCronJob is applied but schedules nothing until resumed
    ray_auth_secret: str = ""  # "" = KubeRay generates the Ray auth token Secret; else an existing Secret's name
    gcs_redis_address: str = ""  # e.g. redis.semantica:6379: GCS fault tolerance for the RayService; "" = off
    gcs_redis_password_secret: str = ""  # a Secret with key `password` for that Redis; "" = no password
    upgrade_strategy: str = "NewCluster"  # RayService spec.upgradeStrategy.type: one of UPGRADE_STRATEGIES
    index_batch_manifest: str = "/data/repos.yaml"  # on the index volume
    extra_overrides: list[str] = field(default_factory=list)  # more `section.field=value` config overrides
    env: dict[str, str] = field(default_factory=dict)  # more container environment, e.g. OTEL_EXPORTER_OTLP_ENDPOINT


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
    if values.upgrade_strategy not in UPGRADE_STRATEGIES:
        raise DeployError(f"{path}: upgrade_strategy {values.upgrade_strategy!r}: use one of {list(UPGRADE_STRATEGIES)}")
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


def serve_config(serve_yaml: dict[str, Any], values: Values, replica_num_cpus: float = 0.0) -> dict[str, Any]:
    """conf/serve.yaml for the cluster: bound on every interface, the cluster config and overrides, replicas, and
    each replica's CPUs from the cluster config (`replica_num_cpus`; 0 keeps serve.yaml's)."""
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
        if replica_num_cpus > 0:
            deployment["ray_actor_options"] = {**(deployment.get("ray_actor_options") or {}), "num_cpus": replica_num_cpus}
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
        "workingDir": WORKDIR, "env": [{"name": "SEMANTICA_CONFIG", "value": CONFIG_IN_IMAGE},
                                        *({"name": k, "value": str(v)} for k, v in sorted(values.env.items()))],
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
    head = {"rayStartParams": {"dashboard-host": DASHBOARD_HOST, "num-cpus": "0"},
            "template": {"spec": {"containers": [_container(values, "ray-head", values.head, True)],
                                  "volumes": _volumes(values)}}}
    worker = {"groupName": "workers", "replicas": values.worker_replicas, "minReplicas": 1,
              "maxReplicas": max(values.worker_max_replicas, values.worker_replicas), "rayStartParams": {},
              "template": {"spec": {"containers": [_container(values, "ray-worker", values.workers, False)],
                                    "volumes": _volumes(values)}}}
    auth: dict[str, Any] = {"mode": "token"}
    if values.ray_auth_secret:
        auth["secretName"] = values.ray_auth_secret
    spec: dict[str, Any] = {"rayVersion": values.ray_version, "authOptions": auth, "headGroupSpec": head,
                            "workerGroupSpecs": [worker]}
    if serve:
        spec["enableInTreeAutoscaling"] = True
        if values.gcs_redis_address:
            spec["gcsFaultToleranceOptions"] = gcs_fault_tolerance(values)
    return spec


def gcs_fault_tolerance(values: Values) -> dict[str, Any]:
    """GCS state in an external Redis, so the head pod can restart without losing the Serve applications."""
    options: dict[str, Any] = {"redisAddress": values.gcs_redis_address}
    if values.gcs_redis_password_secret:
        options["redisPassword"] = {"valueFrom": {"secretKeyRef": {"name": values.gcs_redis_password_secret,
                                                                   "key": "password"}}}
    return options


def render(serve_yaml: dict[str, Any], values: Values, replica_num_cpus: float = 0.0) -> dict[str, list[dict[str, Any]]]:
    """File name (a path under the output directory) -> the Kubernetes objects it holds."""
    labels = {"app.kubernetes.io/name": "semantica", "app.kubernetes.io/instance": values.name}
    service = {
        "apiVersion": RAY_API, "kind": "RayService", "metadata": {"name": values.name, "labels": labels},
        "spec": {"serveConfigV2": dump(serve_config(serve_yaml, values, replica_num_cpus)),
                 "upgradeStrategy": {"type": values.upgrade_strategy},
                 "rayClusterConfig": ray_cluster_spec(values, serve=True)},
    }
    entrypoint = (f"semantica index-batch --manifest {values.index_batch_manifest} --ray-address auto --json "
                  + " ".join(f"--set {shlex.quote(o)}" for o in config_overrides(values)))
    job_name = f"{values.name}-index-batch"
    job_spec = {"entrypoint": entrypoint, "shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 3600,
                "rayClusterSpec": ray_cluster_spec(values, serve=False)}
    cron = {
        "apiVersion": RAY_API, "kind": "RayCronJob", "metadata": {"name": job_name, "labels": labels},
        "spec": {"schedule": values.index_batch_schedule, "timeZone": values.index_batch_time_zone,
                 "suspend": values.index_batch_suspend, "jobTemplate": job_spec},
    }
    first = {"apiVersion": RAY_API, "kind": "RayJob", "metadata": {"name": f"{job_name}-first", "labels": labels},
             "spec": copy.deepcopy(job_spec)}
    claim: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": values.index_volume_claim, "labels": labels},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": values.index_volume_size}}},
    }
    if values.index_volume_storage_class:
        claim["spec"]["storageClassName"] = values.index_volume_storage_class
    files = {"rayservice.yaml": [service], "raycronjob-index-batch.yaml": [cron], "pvc.yaml": [claim]}
    files["kustomization.yaml"] = [_kustomization(values, sorted(files))]
    files[f"{FIRST_INDEX_DIR}/rayjob-index-batch.yaml"] = [first]
    files[f"{FIRST_INDEX_DIR}/kustomization.yaml"] = [_kustomization(values, ["rayjob-index-batch.yaml"])]
    return files


def _kustomization(values: Values, resources: list[str]) -> dict[str, Any]:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": values.namespace,
            "resources": resources}


def write(files: dict[str, list[dict[str, Any]]], out: str | Path) -> list[Path]:
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, objects in files.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# generated by `semantica deploy render`: edit deploy/values.yaml or conf/serve.yaml instead\n"
                        + yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False))
        written.append(path)
    return written
