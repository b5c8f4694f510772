# Stand-in for minio/minio and minio/mc (README.md beside this file): an S3 server on port 9000
# (moto's, the tests' S3) behind `minio server`, and the few `mc` commands the compose file runs.
FROM apache/airflow:3.3.2-python3.11
RUN pip install --no-cache-dir "moto[server]==5.2.5" boto3
COPY minio.py /usr/local/bin/minio
COPY minio.py /usr/local/bin/mc
USER root
ENV HOME=/root
WORKDIR /
EXPOSE 9000
ENTRYPOINT ["minio"]
CMD ["server", "/data"]
