"""bounded influence: the key that routed, on each route event

Revision ID: 0010
Revises: 0008
Create Date: 2026-12-02 10:30:00.000000

route_events.key_id names the key that asked for the route. A report is the evidence of
the key that reported it, or, for a report without one (the gateway's call, a validated
call), of the key that routed the step: the usage prior and query memory weigh one key's
evidence for other keys' routes by how many keys agree (app/loop/trust.py).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('route_events') as batch:
        batch.add_column(sa.Column('key_id', sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('route_events') as batch:
        batch.drop_column('key_id')
