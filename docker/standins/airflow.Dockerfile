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
# The official image has a CPython of its own build; Debian bookworm's 3.11.2 is too old for our pins
# (gcloud-aio-auth needs >= 3.11.3), so the host's own CPython 3.11 (scripts/stack_images.sh packs it,
# without its site-packages) goes in /opt/python, found by the loader through ld.so.conf.
COPY python.tar /tmp/python.tar
RUN mkdir -p /opt/python && tar -C /opt/python -xf /tmp/python.tar && rm /tmp/python.tar \
 && echo /opt/python/lib > /etc/ld.so.conf.d/opt-python.conf && ldconfig \
 && ln -sf /opt/python/bin/python3 /usr/local/bin/python3 && ln -sf /opt/python/bin/python3 /usr/local/bin/python \
 && /usr/local/bin/python3 -c "import ssl, sqlite3, ctypes, lzma, bz2; import sys; print(sys.version)"
RUN useradd --uid 50000 --gid 0 --home-dir /home/airflow --create-home --shell /bin/bash airflow \
 && mkdir -p /opt/airflow && chown airflow:0 /opt/airflow && chmod g+rwx /opt/airflow
COPY airflow-entrypoint.sh /entrypoint
USER airflow
# the official image installs into the user's ~/.local; here that is a virtualenv (Debian's Python
# refuses user installs outside one), first on PATH, so `pip install` as airflow lands in it
RUN /opt/python/bin/python3 -m venv /home/airflow/.local \
 && pip install --no-cache-dir "apache-airflow[postgres]==${AIRFLOW_VERSION}" \
 && airflow version
WORKDIR /opt/airflow
ENTRYPOINT ["/usr/bin/dumb-init", "--", "/entrypoint"]
CMD []
