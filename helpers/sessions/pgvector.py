"""pgvector on the PostgreSQL session store (lesson 11): the type, its HNSW index and its text format.

pgvector (``CREATE EXTENSION vector``) adds a ``vector`` type, the cosine distance ``<=>`` and HNSW
indexes. It lives in whatever schema it was created in (usually ``public``), while a store's tables may
live in a ``schema=`` of their own whose search path does not include it, so every name here is written
schema-qualified: ``"public".vector``, ``OPERATOR("public".<=>)``.

One ``recall_pieces.embedding`` column holds vectors of any size; an HNSW index needs one size, so there
is one partial index per size (``WHERE dim = 384``) over the column cast to that size, and a search casts
the same way so the planner can use it.
"""
from __future__ import annotations

import numpy as np
import psycopg
from psycopg import sql


def pgvector_type(conn: psycopg.Connection) -> str | None:
    """pgvector's ``vector`` type, schema-qualified, creating the extension when this role may; None without it."""
    row = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                       "WHERE e.extname = 'vector'").fetchone()
    if row is None:
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if available is None:
            return None
        try:
            with conn.transaction():  # a savepoint: a role that may not create extensions changes nothing
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error:
            return None
        return pgvector_type(conn)
    return sql.Identifier(row[0]).as_string(conn) + ".vector"


def distance_operator(vector_type: str) -> str:
    """The cosine-distance operator in the extension's schema: ``OPERATOR("public".<=>)``."""
    return f"OPERATOR({vector_type.rsplit('.', 1)[0]}.<=>)"


def hnsw_index_sql(vector_type: str, dim: int) -> str:
    """The partial HNSW index (cosine) over the pieces of ``dim`` numbers (``dim`` is a checked int)."""
    dim = int(dim)
    ops = vector_type.rsplit(".", 1)[0] + ".vector_cosine_ops"
    return (f"CREATE INDEX IF NOT EXISTS recall_pieces_hnsw_{dim} ON recall_pieces USING hnsw "
            f"((embedding::{vector_type}({dim})) {ops}) WHERE dim = {dim}")


def vector_text(blob: bytes) -> str:
    """float32 bytes as pgvector's text input, ``[0.1,0.2,...]``: each number written exactly (as the double
    it widens to), so pgvector reads back the same float32."""
    values = np.frombuffer(bytes(blob), dtype="<f4").astype(np.float64)
    return "[" + ",".join(map(repr, values.tolist())) + "]"


def fill_vector_column(conn: psycopg.Connection, vector_type: str, batch: int = 2000) -> int:
    """Copy the float32 bytes of pieces without a ``vector`` value into the column (a migration of rows
    stored before pgvector was there; nothing is embedded again). Returns the rows filled."""
    filled = 0
    while True:
        rows = conn.execute("SELECT user_id, session_id, turn_id, piece, vector FROM recall_pieces "
                            "WHERE embedding IS NULL LIMIT %s", (batch,)).fetchall()
        if not rows:
            return filled
        with conn.cursor() as cur:
            cur.executemany(f"UPDATE recall_pieces SET embedding = %s::{vector_type} WHERE user_id = %s AND "
                            "session_id = %s AND turn_id = %s AND piece = %s",
                            [(vector_text(r[4]), *r[:4]) for r in rows])
        filled += len(rows)
