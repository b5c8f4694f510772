# Stand-in for postgres:16.4-bookworm (README.md beside this file): Debian bookworm's PostgreSQL 15,
# configured from POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB as the official image is.
FROM lakefs-gc-base:bookworm
ENV PGDATA=/var/lib/postgresql/data \
    PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql && chmod 2777 /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/bin/dumb-init", "--", "docker-entrypoint.sh"]
CMD ["postgres"]
