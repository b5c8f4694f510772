# Stand-in for apache/airflow:3.3.2-python3.11 (README.md beside this file): what docker/Dockerfile
# and docker-compose.yaml use of the official image.
FROM lakefs-gc-base:bookworm
ARG AIRFLOW_VERSION=3.3.2
ENV AIRFLOW_HOME=/opt/airflow \
    AIRFLOW_UID=50000 \
    VIRTUAL_ENV=/home/airflow/.local \
    PATH=/home/airflow/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN useradd --uid 50000 --gid 0 --home-dir /home/airflow --create-home --shell /bin/bash airflow \
 && mkdir -p /opt/airflow && chown airflow:0 /opt/airflow && chmod g+rwx /opt/airflow
COPY airflow-entrypoint.sh /entrypoint
USER airflow
# the official image installs into the user's ~/.local; here that is a virtualenv (Debian's Python
# refuses user installs outside one), first on PATH, so `pip install` as airflow lands in it
RUN python3 -m venv /home/airflow/.local \
 && pip install --no-cache-dir "apache-airflow[postgres]==${AIRFLOW_VERSION}" \
 && airflow version
WORKDIR /opt/airflow
ENTRYPOINT ["/usr/bin/dumb-init", "--", "/entrypoint"]
CMD []
