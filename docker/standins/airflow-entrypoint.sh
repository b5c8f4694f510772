#!/bin/bash
# The official image's entrypoint, as far as docker-compose.yaml uses it: `bash ...` and
# `python ...` run as they are; anything else is an airflow command (`api-server`, `scheduler`...).
set -e
case "${1:-}" in
  "") exec bash ;;
  bash|python|python3) exec "$@" ;;
  *) exec airflow "$@" ;;
esac
