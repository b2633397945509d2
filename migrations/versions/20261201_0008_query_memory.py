"""query memory: the reporting key on feedback, and the admin's forget marks

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 19:10:00.000000

feedback.key_id lets query memory cap the weight of any one key (app/loop/memory.py);
memory_forgets records what an admin told the memory to forget, on every replica and
across restarts.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('feedback') as batch:
        batch.add_column(sa.Column('key_id', sa.String(length=32), nullable=True))
    op.create_table('memory_forgets',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('namespace', sa.String(length=64), nullable=False),
    sa.Column('tool', sa.String(length=128), nullable=False),
    sa.Column('text_hash', sa.String(length=64), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_forgets'))
    )
    op.create_index('ix_memory_forgets_namespace', 'memory_forgets', ['namespace'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_memory_forgets_namespace', table_name='memory_forgets')
    op.drop_table('memory_forgets')
    with op.batch_alter_table('feedback') as batch:
        batch.drop_column('key_id')
