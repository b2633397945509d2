"""learning from reports: each namespace's trained models, and its learning switch

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 15:20:00.000000

learned_models keeps every adapter the guard judged (app/learning/guard.py), the one
serving, the retired ones a rollback may serve again, and the refused ones with the reason;
every replica loads the serving one (app/learning/service.py). learning_switches holds an
admin's off (no row: learning is on).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "learned_models",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("weights", sa.LargeBinary(), nullable=True),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("calibration", sa.JSON(), nullable=True),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("pool", sa.Integer(), nullable=False),
        sa.Column("relative", sa.Boolean(), nullable=False),
        sa.Column("verdict", sa.JSON(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("served_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_learned_models")),
        sa.UniqueConstraint(
            "namespace", "version", name=op.f("uq_learned_models_namespace_version")
        ),
    )
    op.create_index(
        "ix_learned_models_namespace_state", "learned_models", ["namespace", "state"], unique=False
    )
    op.create_table(
        "learning_switches",
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("namespace", name=op.f("pk_learning_switches")),
    )


def downgrade() -> None:
    op.drop_table("learning_switches")
    op.drop_index("ix_learned_models_namespace_state", table_name="learned_models")
    op.drop_table("learned_models")
