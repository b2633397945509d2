"""route events, their candidates, and feedback

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 20:37:01.299455
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('feedback',
    sa.Column('route_id', sa.String(length=64), nullable=False),
    sa.Column('namespace', sa.String(length=64), nullable=False),
    sa.Column('chosen', sa.String(length=128), nullable=True),
    sa.Column('rank', sa.Integer(), nullable=True),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('error_code', sa.String(length=128), nullable=True),
    sa.Column('from_validate', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('route_id', name=op.f('pk_feedback'))
    )
    op.create_index('ix_feedback_namespace_created_at', 'feedback', ['namespace', 'created_at'], unique=False)
    op.create_table('route_events',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('namespace', sa.String(length=64), nullable=False),
    sa.Column('query', sa.Text(), nullable=False),
    sa.Column('k', sa.Integer(), nullable=False),
    sa.Column('latency_ms', sa.Float(), nullable=False),
    sa.Column('model', sa.String(length=128), nullable=False),
    sa.Column('weights', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_route_events'))
    )
    op.create_index(op.f('ix_route_events_created_at'), 'route_events', ['created_at'], unique=False)
    op.create_index('ix_route_events_namespace_created_at', 'route_events', ['namespace', 'created_at'], unique=False)
    op.create_table('route_candidates',
    sa.Column('route_id', sa.String(length=64), nullable=False),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('score', sa.Float(), nullable=False),
    sa.Column('stages', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['route_id'], ['route_events.id'], name=op.f('fk_route_candidates_route_id_route_events'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('route_id', 'rank', name=op.f('pk_route_candidates'))
    )
    op.create_index('ix_route_candidates_name', 'route_candidates', ['name'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_route_candidates_name', table_name='route_candidates')
    op.drop_table('route_candidates')
    op.drop_index('ix_route_events_namespace_created_at', table_name='route_events')
    op.drop_index(op.f('ix_route_events_created_at'), table_name='route_events')
    op.drop_table('route_events')
    op.drop_index('ix_feedback_namespace_created_at', table_name='feedback')
    op.drop_table('feedback')
