"""The docker-compose stack (docker-compose.yaml, docker/Dockerfile, .env, config/gc_repositories.compose.yaml).

No Docker engine is needed or contacted. The static checks read the files themselves (YAML merge
keys resolved by PyYAML, ``${VAR}`` filled from ``.env`` the way compose does) and always run; the
last test has a compose client (``docker compose``, else ``docker-compose``) parse and resolve the
file with ``config`` and is skipped, saying why, when neither client is installed.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from lakefs_sandbox.compose_stack import LONG_RUNNING
from tests.stack.compose_file import (
    AIRFLOW_SERVICES,
    COMPOSE_FILE,
    DOTENV,
    PROJECT_IN_IMAGE,
    ROOT,
    airflow_conns,
    argv_of,
    compose,
    compose_config,
    container_ports,
    dockerfile_lines,
    env_of,
    is_pinned,
    mounts,
    requirement_pins,
    services,
)

# ------------------------------------------------------------------------------------------------
# static checks (no compose client needed)


@pytest.mark.parametrize(
    ("ref", "ok"),
    [
        ("apache/airflow:3.3.2-python3.11", True),
        ("treeverse/lakefs:1.84.1", True),
        ("minio/minio:RELEASE.2025-04-22T22-12-26Z", True),
        ("postgres:16.4-bookworm", True),
        ("x/y@sha256:" + "0" * 64, True),
        ("lakefs-gc-airflow:0.1.0", True),
        ("apache/airflow", False),
        ("treeverse/lakefs:latest", False),
        ("postgres:16", False),
        ("postgres:16-alpine", False),
        ("treeverse/lakefs:1", False),
        ("treeverse/lakefs:1.84", False),
        ("apache/airflow:3-python3.11", False),
        ("localhost:5000/img", False),
    ],
)
def test_pin_rule(ref, ok):
    assert is_pinned(ref) is ok


def dockerfile_base() -> str:
    """docker/Dockerfile's FROM, its ``ARG`` default filled in (the base is an ARG: users keep the
    official image, our test machines build a stand-in under the same name)."""
    lines = dockerfile_lines()
    froms = [ln.split()[1] for ln in lines if ln.upper().startswith("FROM ")]
    assert len(froms) == 1, f"docker/Dockerfile must have one FROM, has {froms}"
    args = dict(ln.split(None, 1)[1].split("=", 1) for ln in lines if ln.upper().startswith("ARG ") and "=" in ln)
    return re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], froms[0])


def test_every_image_is_pinned():
    refs = {name: s["image"] for name, s in services().items() if "image" in s}
    assert set(refs) == set(services()), f"services without an image: {set(services()) - set(refs)}"
    froms = [dockerfile_base()]
    loose = {k: v for k, v in refs.items() if not is_pinned(v)}
    loose.update({f"Dockerfile FROM {i}": f for i, f in enumerate(froms) if not is_pinned(f)})
    assert not loose, f"images not pinned to an exact tag: {loose}"


def test_airflow_image_is_built_from_the_projects_requirements():
    lines = dockerfile_lines()
    base = [dockerfile_base()]
    assert base == [f"apache/airflow:{requirement_pins()['apache-airflow']}-python3.11"], (
        "the base image must be the Airflow version pinned in requirements.txt"
    )
    assert any(re.match(r"^COPY\b.*\brequirements\.txt\b", ln) for ln in lines), "Dockerfile must COPY requirements.txt"
    installs = [ln for ln in lines if ln.startswith("RUN") and re.search(r"pip install\b[^&]*-r requirements\.txt", ln)]
    assert installs, "Dockerfile must `pip install -r requirements.txt`"
    assert "check_pins.py requirements.txt" in installs[0], "the install must be followed by the pin check"
    assert any("openjdk-17-jre-headless" in ln for ln in lines), "Spark 4 needs Java 17 in the image"
    assert any(re.search(r"pip install\b.*-e \.", ln) for ln in lines), "the project itself must be installed"
    assert any("build/lakefs_gc.zip" in ln for ln in lines), "spark-submit --py-files needs build/lakefs_gc.zip"
    for folder in ("include/", "plugins/", "dags/", "config/"):  # the Spark jobs are inside include/lakefs_gc
        assert any(re.match(rf"^COPY\b.*\s{re.escape(folder)}\s", ln) for ln in lines), f"Dockerfile must COPY {folder}"
    # Only the project's pinned file: no install-at-start hook anywhere in the stack.
    assert "_PIP_ADDITIONAL_REQUIREMENTS" not in COMPOSE_FILE.read_text()
    ignored = {
        ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln.strip() and not ln.startswith("#")
    }
    assert not ignored & {"requirements.txt", "pyproject.toml", "include", "plugins", "dags", "config", "docker"}
    assert ".env" in ignored, ".env (secrets) must stay out of the build context"


def test_services_using_the_project_image_build_it():
    built = {name: s for name, s in services().items() if s.get("image", "").startswith("lakefs-gc-airflow:")}
    assert set(AIRFLOW_SERVICES) | {"spark-master", "spark-worker", "lakefs-seed"} <= set(built)
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    for name, s in built.items():
        assert s["image"] == f"lakefs-gc-airflow:{version}", name
        assert s.get("build") == {"context": ".", "dockerfile": "docker/Dockerfile"}, (
            f"{name}: every service of the local image carries the build section (never pulled)"
        )
        assert "_PIP_ADDITIONAL_REQUIREMENTS" not in env_of(s), name


def test_depends_on_conditions_are_satisfiable():
    svc = services()
    for name, s in svc.items():
        deps = s.get("depends_on") or {}
        assert isinstance(deps, dict), f"{name}: depends_on must use the long form with conditions"
        for dep, spec in deps.items():
            assert dep in svc, f"{name} depends on unknown service {dep}"
            cond = spec["condition"]
            if cond == "service_healthy":
                assert "healthcheck" in svc[dep], f"{name} waits for {dep} to be healthy, but it has no healthcheck"
            elif cond == "service_completed_successfully":
                assert svc[dep].get("restart") == "no", f"{dep} is a one-shot service: restart must be 'no'"
            else:
                assert cond == "service_started", cond
    for name in LONG_RUNNING:  # what the stack's test and the chaos bench wait for
        assert "healthcheck" in svc[name], f"{name} has no healthcheck"
    for name in AIRFLOW_SERVICES[1:]:
        assert svc[name]["depends_on"]["airflow-init"]["condition"] == "service_completed_successfully"
        assert svc[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    init = " ".join(argv_of(svc["airflow-init"].get("command")))
    assert "airflow db migrate &&" in init, "airflow-init must fail when the migration fails"


def test_connections_name_services_that_exist():
    svc = services()
    env = env_of(svc["airflow-scheduler"])
    for name in AIRFLOW_SERVICES:
        assert env_of(svc[name]).items() >= {k: v for k, v in env.items() if k.startswith("AIRFLOW_CONN_")}.items(), (
            f"{name} lacks the connections"
        )
    conns = airflow_conns(env)
    assert {"lakefs_default", "aws_default", "spark_default"} <= set(conns)

    lakefs = urlsplit(conns["lakefs_default"]["host"])
    assert conns["lakefs_default"]["conn_type"] == "lakefs_gc"
    assert lakefs.scheme == "http"
    assert lakefs.hostname == "lakefs"
    assert lakefs.port in container_ports(svc["lakefs"])
    lk_env = env_of(svc["lakefs"])
    assert conns["lakefs_default"]["login"] == lk_env["LAKEFS_INSTALLATION_ACCESS_KEY_ID"]
    assert conns["lakefs_default"]["password"] == lk_env["LAKEFS_INSTALLATION_SECRET_ACCESS_KEY"]
    assert lk_env["LAKEFS_INSTALLATION_USER_NAME"]

    aws = conns["aws_default"]
    s3 = urlsplit(aws["extra"]["endpoint_url"])
    assert aws["conn_type"] == "aws"
    assert s3.hostname == "minio"
    assert s3.port in container_ports(svc["minio"])
    minio_env = env_of(svc["minio"])
    assert (aws["login"], aws["password"]) == (minio_env["MINIO_ROOT_USER"], minio_env["MINIO_ROOT_PASSWORD"])
    assert urlsplit(lk_env["LAKEFS_BLOCKSTORE_S3_ENDPOINT"]).hostname == "minio"
    assert (
        lk_env["LAKEFS_BLOCKSTORE_S3_CREDENTIALS_ACCESS_KEY_ID"],
        lk_env["LAKEFS_BLOCKSTORE_S3_CREDENTIALS_SECRET_ACCESS_KEY"],
    ) == (aws["login"], aws["password"])

    spark = urlsplit(conns["spark_default"]["host"])
    assert conns["spark_default"]["conn_type"] == "spark"
    assert spark.scheme == "spark"
    assert spark.hostname == "spark-master"
    assert spark.hostname in svc
    master_cmd = argv_of(svc["spark-master"]["command"])
    assert master_cmd[0] == "org.apache.spark.deploy.master.Master"
    assert master_cmd[master_cmd.index("--port") + 1] == str(spark.port)
    worker_cmd = argv_of(svc["spark-worker"]["command"])
    assert worker_cmd[:2] == ["org.apache.spark.deploy.worker.Worker", conns["spark_default"]["host"]]

    assert urlsplit(env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"]).hostname == "airflow-apiserver"
    db = urlsplit(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    assert db.hostname == "postgres"
    assert db.password == env_of(svc["postgres"])["POSTGRES_PASSWORD"]


def test_gc_config_and_shared_work_dir():
    from lakefs_gc.config import load_config

    svc = services()
    env = env_of(svc["airflow-scheduler"])
    path = env["LAKEFS_GC_CONFIG"]
    assert path.startswith(PROJECT_IN_IMAGE + "/")
    cfg = load_config(ROOT / path[len(PROJECT_IN_IMAGE) + 1 :])
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == f"{PROJECT_IN_IMAGE}/dags"
    conns = set(airflow_conns(env))
    sched, worker = mounts(svc["airflow-scheduler"]), mounts(svc["spark-worker"])
    named = set(compose().get("volumes") or {})
    for repo in cfg.repositories:
        assert {repo.lakefs_conn_id, repo.storage_conn_id, repo.spark_conn_id} <= conns, repo.repository
        # The Spark drivers run in the scheduler (LocalExecutor, client mode), the executors on the
        # worker: work_dir must be one named volume at the same path on both sides.
        assert repo.work_dir, repo.work_dir
        assert repo.work_dir in sched, repo.work_dir
        assert repo.work_dir in worker, repo.work_dir
        assert sched[repo.work_dir] == worker[repo.work_dir]
        assert sched[repo.work_dir] in named
        assert env["LAKEFS_GC_WORK_DIR"] == repo.work_dir
    assert "sample-repo" in {r.repository for r in cfg.repositories}


def test_seed_service_runs_the_shared_seeding_code():
    svc = services()
    seed = svc["lakefs-seed"]
    argv = argv_of(seed.get("entrypoint")) + argv_of(seed.get("command"))
    bucket = env_of(svc["minio-init"])["MINIO_BUCKET"]
    assert argv == [
        "python",
        "-m",
        "lakefs_sandbox.seed",
        "--endpoint",
        "http://lakefs:8000",
        "--repository",
        "sample-repo",
        "--namespace",
        f"s3://{bucket}/sample-repo",
        "--backdate",
        "--manifest",
        "/opt/lakefs-gc-work/sample-repo.manifest.json",
    ]
    seed_env = env_of(seed)
    lk_env = env_of(svc["lakefs"])
    assert seed_env["LAKEFS_ACCESS_KEY_ID"] == lk_env["LAKEFS_INSTALLATION_ACCESS_KEY_ID"]
    assert seed_env["LAKEFS_SECRET_ACCESS_KEY"] == lk_env["LAKEFS_INSTALLATION_SECRET_ACCESS_KEY"]
    assert seed["depends_on"]["lakefs"]["condition"] == "service_healthy"
    script = " ".join(argv_of(svc["minio-init"].get("entrypoint")) + argv_of(svc["minio-init"].get("command")))
    assert "mc mb --ignore-existing" in script
    assert "until mc alias set" in script


def test_dotenv_is_local_development_defaults_only():
    text = DOTENV.read_text()
    assert "LOCAL-DEVELOPMENT DEFAULTS ONLY" in text
    assert compose()  # every variable the compose file uses is defined there (checked in compose())
    for name, s in services().items():
        for p in s.get("ports") or []:
            assert str(p).startswith("127.0.0.1:"), f"{name}: published port {p} must be bound to 127.0.0.1"


# ------------------------------------------------------------------------------------------------
# the compose client itself


def test_compose_config_parses_and_resolves_like_the_static_checks():
    resolved = compose_config()
    assert set(resolved) == set(services())
    for name, s in resolved.items():
        assert s["image"] == services()[name]["image"], name
        assert is_pinned(s["image"]), name
    assert airflow_conns(env_of(resolved["airflow-scheduler"])) == airflow_conns(
        env_of(services()["airflow-scheduler"])
    )
    assert argv_of(resolved["lakefs-seed"]["command"]) == argv_of(services()["lakefs-seed"]["command"])


def test_the_images_constraints_agree_with_the_pins():
    """docker/constraints.txt (the image's pip install resolves nothing) holds every pin of
    requirements.txt at the same version: a pin changed in one file alone would fail the image's
    build (pip: ResolutionImpossible) or, worse, leave the image on another version than our set-up."""
    constraints = {}
    for line in (ROOT / "docker" / "constraints.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if m:
            constraints[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    pins = {re.sub(r"[-_.]+", "-", k): v for k, v in requirement_pins().items()}
    wrong = {k: (v, constraints.get(k)) for k, v in pins.items() if constraints.get(k) != v}
    assert not wrong, f"requirements.txt pin vs docker/constraints.txt (regenerate it: its header says how): {wrong}"
