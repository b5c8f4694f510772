# Stand-in for treeverse/lakefs:1.84.0 (README.md beside this file): the lakeFS binary the set-up
# builds from the Go module proxy, laid out as the official image is (/app/lakefs, user lakefs).
FROM lakefs-gc-base:bookworm
RUN useradd --uid 101 --user-group --home-dir /home/lakefs --create-home --shell /bin/sh lakefs
COPY lakefs /app/lakefs
USER lakefs
WORKDIR /home/lakefs
EXPOSE 8000
ENTRYPOINT ["/app/lakefs"]
CMD ["run"]
