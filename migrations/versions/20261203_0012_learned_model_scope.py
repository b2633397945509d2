"""learned models: whose routes each may move, its digest stored, bounded storage

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 12:00:00.000000

Bounded influence over learning (app/learning/scope.py): ``confirmed`` lists the tools a
model moves in every key's routes, ``own`` each key's tools it moves in that key's alone. A
model stored before has neither: it serves nobody, and its namespace is trained again.
``digest`` keeps ``Adapter.digest`` so that ``GET /v1/learning`` never reads the weights
(filled here for the rows that hold them); only the serving and the previous model keep
their weights from now on (``app.learning.repository.prune``, ``toolreach purge``).
"""

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("learned_models") as batch:
        batch.add_column(sa.Column("digest", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("confirmed", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("own", sa.JSON(), nullable=True))
    models = sa.table(
        "learned_models",
        sa.column("id", sa.Integer()),
        sa.column("weights", sa.LargeBinary()),
        sa.column("digest", sa.String()),
    )
    bind = op.get_bind()
    ids = bind.execute(sa.select(models.c.id).where(models.c.weights.is_not(None))).scalars()
    for row_id in list(ids):  # one matrix in memory at a time
        raw = bind.execute(sa.select(models.c.weights).where(models.c.id == row_id)).scalar_one()
        digest = hashlib.sha256(raw).hexdigest()[:16]
        bind.execute(models.update().where(models.c.id == row_id).values(digest=digest))


def downgrade() -> None:
    with op.batch_alter_table("learned_models") as batch:
        batch.drop_column("own")
        batch.drop_column("confirmed")
        batch.drop_column("digest")
