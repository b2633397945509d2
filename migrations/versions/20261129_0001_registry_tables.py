"""registry tables

Revision ID: 0001
Revises: 
Create Date: 2026-11-29 20:21:58.508047
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    
    op.create_table('embeddings',
    sa.Column('model', sa.String(length=128), nullable=False),
    sa.Column('text_hash', sa.String(length=64), nullable=False),
    sa.Column('dim', sa.Integer(), nullable=False),
    sa.Column('vector', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('model', 'text_hash', name=op.f('pk_embeddings'))
    )
    state = op.create_table('registry_state',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_registry_state'))
    )
    # The one row every write bumps; created here so concurrent first writers never race.
    op.bulk_insert(state, [{'id': 1, 'revision': 0}])
    op.create_table('tools',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('namespace', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('current_version', sa.Integer(), nullable=False),
    sa.Column('summary', sa.String(length=300), nullable=False),
    sa.Column('tags', sa.Text(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tools')),
    sa.UniqueConstraint('namespace', 'name', name=op.f('uq_tools_namespace_name'))
    )
    op.create_index(op.f('ix_tools_namespace'), 'tools', ['namespace'], unique=False)
    op.create_index(op.f('ix_tools_revision'), 'tools', ['revision'], unique=False)
    op.create_table('tool_versions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tool_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('card', sa.JSON(), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tool_id'], ['tools.id'], name=op.f('fk_tool_versions_tool_id_tools'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tool_versions')),
    sa.UniqueConstraint('tool_id', 'version', name=op.f('uq_tool_versions_tool_id_version'))
    )
    


def downgrade() -> None:
    
    op.drop_table('tool_versions')
    op.drop_index(op.f('ix_tools_revision'), table_name='tools')
    op.drop_index(op.f('ix_tools_namespace'), table_name='tools')
    op.drop_table('tools')
    op.drop_table('registry_state')
    op.drop_table('embeddings')
    
