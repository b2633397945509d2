"""The Helm chart, rendered by a real helm (deploy/install-helm.sh) and checked offline: every
manifest against the Kubernetes API schemas (kubernetes-validate, strict), then what matters
for running N replicas on one Postgres: probes, autoscaler, disruption budget, the migration
hook, secrets by reference only, and a non-root, read-only container."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.tools import CHART, ROOT, helm

EVERYTHING = CHART / "ci" / "everything-values.yaml"
# The oldest version Chart.yaml's kubeVersion admits, and the pinned current one.
KUBE_FLOOR = "1.25.0"
KUBE_PINNED = "1.33.0"
# Kinds kubernetes-validate has no schema for (CRDs); each is checked by hand below.
NO_OFFLINE_SCHEMA = {("monitoring.coreos.com/v1", "ServiceMonitor")}
EXPECTED_KINDS = {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Job"}
SECRET_SETTINGS = {
    "TOOLREACH_DATABASE_URL",
    "TOOLREACH_LISTEN_DATABASE_URL",
    "TOOLREACH_ADMIN_KEYS",
    "TOOLREACH_AGENT_KEYS",
    "TOOLREACH_DASHBOARD_KEYS",
}

Manifest = dict[str, Any]


def render(*args: str, kube: str = KUBE_PINNED) -> list[Manifest]:
    release = ["toolreach", str(CHART), "--namespace", "agents", "--kube-version", kube]
    done = helm("template", *release, *args)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def render_error(*args: str) -> str:
    done = helm("template", "toolreach", str(CHART), "--kube-version", KUBE_PINNED, *args)
    assert done.returncode != 0, "the chart rendered, but should have refused"
    return done.stderr


def of_kind(docs: list[Manifest], kind: str) -> list[Manifest]:
    return [doc for doc in docs if doc["kind"] == kind]


def one(docs: list[Manifest], kind: str) -> Manifest:
    (found,) = of_kind(docs, kind)
    return found


def container(workload: Manifest) -> Manifest:
    (first,) = workload["spec"]["template"]["spec"]["containers"]
    return first


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


@pytest.fixture(scope="module")
def default() -> list[Manifest]:
    return render()


@pytest.fixture(scope="module")
def everything() -> list[Manifest]:
    return render("-f", str(EVERYTHING))


@pytest.fixture(params=["default", "everything"])
def each(request: pytest.FixtureRequest) -> Iterator[list[Manifest]]:
    yield request.getfixturevalue(request.param)


@pytest.mark.parametrize("values", [[], ["-f", str(EVERYTHING)]], ids=["default", "everything"])
def test_helm_lint_strict(values: list[str]) -> None:
    done = helm("lint", "--strict", str(CHART), *values)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("kube", [KUBE_FLOOR, KUBE_PINNED])
@pytest.mark.parametrize("values", [[], ["-f", str(EVERYTHING)]], ids=["default", "everything"])
def test_every_manifest_is_valid_kubernetes(values: list[str], kube: str) -> None:
    docs = render(*values, kube=kube)
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in NO_OFFLINE_SCHEMA:
            continue
        try:
            kubernetes_validate.validate(doc, kube, strict=True)
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(part) for part in error.path)
            name = f"{doc['kind']} {doc['metadata']['name']}"
            pytest.fail(f"{name}: {where}: {error.message}", pytrace=False)
    assert {doc["kind"] for doc in docs} >= EXPECTED_KINDS


def test_probes_liveness_never_asks_the_database(each: list[Manifest]) -> None:
    app = container(one(each, "Deployment"))
    assert app["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert app["livenessProbe"]["httpGet"]["path"] == "/healthz"  # app/api/health.py: no DB
    assert app["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        settings = app[probe]
        assert settings["httpGet"]["port"] == "http"
        assert settings["timeoutSeconds"] < settings["periodSeconds"], probe
    startup = app["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 120  # models + index load
    assert app["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert app["command"] == ["toolreach", "serve", "--host", "0.0.0.0", "--port", "8000"]


def test_autoscaler_on_cpu_from_two_to_ten(default: list[Manifest]) -> None:
    hpa, deployment = one(default, "HorizontalPodAutoscaler"), one(default, "Deployment")
    assert hpa["spec"]["minReplicas"] == 2
    assert hpa["spec"]["maxReplicas"] == 10
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"]["type"] == "Utilization"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert "replicas" not in deployment["spec"]  # the autoscaler owns the count
    assert container(deployment)["resources"]["requests"]["cpu"]  # utilisation needs a request


def test_without_the_autoscaler_the_deployment_keeps_its_count() -> None:
    docs = render("--set", "autoscaling.enabled=false")
    assert not of_kind(docs, "HorizontalPodAutoscaler")
    assert one(docs, "Deployment")["spec"]["replicas"] == 2


def test_disruption_budget_and_service_cover_the_app_pods_only(each: list[Manifest]) -> None:
    deployment, job = one(each, "Deployment"), one(each, "Job")
    app_pods = deployment["spec"]["template"]["metadata"]["labels"]
    job_pods = job["spec"]["template"]["metadata"]["labels"]
    pdb, service = one(each, "PodDisruptionBudget"), one(each, "Service")
    assert pdb["spec"]["maxUnavailable"] == 1
    for selector in (pdb["spec"]["selector"]["matchLabels"], service["spec"]["selector"]):
        assert selects(selector, app_pods)
        assert not selects(selector, job_pods)  # the migration pod serves nothing
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_migration_job_runs_before_install_and_upgrade(each: list[Manifest]) -> None:
    job = one(each, "Job")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    migrate = container(job)
    assert migrate["command"] == ["toolreach", "migrate"]
    (database,) = migrate["env"]
    assert database["name"] == "TOOLREACH_DATABASE_URL"
    assert "secretKeyRef" in database["valueFrom"]
    # A pre-install hook runs before the chart's other resources exist: it may not need them.
    assert "envFrom" not in migrate
    created = {doc["metadata"]["name"] for doc in of_kind(each, "ServiceAccount")}
    assert pod.get("serviceAccountName", "default") not in created


def test_migration_job_takes_the_direct_url_when_given(everything: list[Manifest]) -> None:
    (database,) = container(one(everything, "Job"))["env"]
    assert database["valueFrom"]["secretKeyRef"] == {"name": "toolreach-db", "key": "direct-url"}
    app_env = {e["name"]: e for e in container(one(everything, "Deployment"))["env"]}
    app_url = app_env["TOOLREACH_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert app_url == {"name": "toolreach-db", "key": "pooled-url"}


def test_the_app_listens_on_the_direct_url_when_given(
    default: list[Manifest], everything: list[Manifest]
) -> None:
    app_env = {e["name"]: e for e in container(one(everything, "Deployment"))["env"]}
    listen = app_env["TOOLREACH_LISTEN_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert listen == {"name": "toolreach-db", "key": "direct-url"}
    plain = {e["name"] for e in container(one(default, "Deployment"))["env"]}
    assert "TOOLREACH_LISTEN_DATABASE_URL" not in plain  # the database URL's own server


def test_secrets_only_by_reference(each: list[Manifest]) -> None:
    assert not of_kind(each, "Secret")
    text = yaml.safe_dump_all(each)
    assert not re.search(r"postgres(ql)?(\+psycopg)?://", text)
    for workload in (one(each, "Deployment"), one(each, "Job")):
        for entry in container(workload)["env"]:
            if entry["name"] in SECRET_SETTINGS:
                assert "value" not in entry, entry["name"]
                assert "secretKeyRef" in entry["valueFrom"], entry["name"]
    for config in of_kind(each, "ConfigMap"):
        assert not SECRET_SETTINGS & set(config["data"])


@pytest.mark.parametrize(
    "setting",
    ["TOOLREACH_ADMIN_KEYS", "TOOLREACH_DATABASE_URL", "TOOLREACH_AGENT_KEYS", "PGPASSWORD"],
)
def test_a_secret_in_values_is_refused(setting: str) -> None:
    assert "looks secret" in render_error("--set", f"config.{setting}=not-a-real-secret-value")


def test_the_image_runs_as_non_root_on_a_read_only_root(each: list[Manifest]) -> None:
    image_user = re.search(r"^USER\s+(\d+)\s*$", (ROOT / "Dockerfile").read_text(), re.M)
    assert image_user, "the Dockerfile must switch to a numeric non-root USER"
    for workload in (one(each, "Deployment"), one(each, "Job")):
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == int(image_user.group(1)) != 0
        assert pod["automountServiceAccountToken"] is False
        # Service links would add TOOLREACH_PORT, TOOLREACH_SERVICE_HOST, ... to the
        # environment of a release named toolreach: names the settings warn about.
        assert pod["enableServiceLinks"] is False
        security = container(workload)["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]
        (tmp,) = pod["volumes"]
        assert "emptyDir" in tmp
        assert container(workload)["volumeMounts"] == [{"name": tmp["name"], "mountPath": "/tmp"}]


def test_service_monitor_only_with_the_prometheus_operator_or_when_asked() -> None:
    crd = ("--api-versions", "monitoring.coreos.com/v1")
    assert not of_kind(render(), "ServiceMonitor")
    assert of_kind(render(*crd), "ServiceMonitor")
    assert not of_kind(render(*crd, "--set", "serviceMonitor.enabled=false"), "ServiceMonitor")
    assert of_kind(render("--set", "serviceMonitor.enabled=true"), "ServiceMonitor")
    assert "must be auto, true or false" in render_error("--set", "serviceMonitor.enabled=yes")


def test_service_monitor_scrapes_the_service(everything: list[Manifest]) -> None:
    monitor, service = one(everything, "ServiceMonitor"), one(everything, "Service")
    assert selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    credentials = endpoint["authorization"]["credentials"]
    assert credentials == {"name": "toolreach-api-keys", "key": "metrics-key"}
