"""rate counts: each replica's count per (kind, subject, window) (app/limits/models.py)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 19:00:00.000000

Every replica adds its new counts to its own rows each second and reads the others';
rows of closed windows are deleted. Subjects are client addresses and key ids, never keys.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('rate_counts',
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('subject', sa.String(length=64), nullable=False),
    sa.Column('window_start', sa.BigInteger(), nullable=False),
    sa.Column('replica', sa.String(length=32), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('kind', 'subject', 'window_start', 'replica', name=op.f('pk_rate_counts'))
    )
    op.create_index(op.f('ix_rate_counts_window_start'), 'rate_counts', ['window_start'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_rate_counts_window_start'), table_name='rate_counts')
    op.drop_table('rate_counts')
