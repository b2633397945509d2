"""dashboard sign-outs: session tokens signed out before they expire (app/dashboard/signouts.py)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 06:27:33.480286
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('dashboard_signouts',
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('token_hash', name=op.f('pk_dashboard_signouts'))
    )


def downgrade() -> None:
    op.drop_table('dashboard_signouts')
