"""Every limit on tool arguments, shared by the tool schemas and the services' own checks.

Fixed ranges are plain numbers. The limits a user can change (content length, batch size, tags,
namespace length) are `SettingLimit`s: a setting of config.py whose default is given here. A
tool type carries the SettingLimit itself (`Annotated[str, MAX_CONTENT]`); when a server builds
its tools, the registry (tools/registry.py) replaces it with the setting's value, so the schema a
client reads states the very limit the services enforce, from one source.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SettingLimit:
    """A maximum (characters of a string, or items of a list) read from the setting `setting`."""

    setting: str
    default: int


MAX_CONTENT = SettingLimit("max_content_length", 100_000)  # characters of a memory's content
MAX_BATCH = SettingLimit("max_batch_size", 1_000)  # memories or ids in one call
MAX_TAGS = SettingLimit("max_tags", 50)  # tags per memory (and per tag filter)
MAX_TAG_CHARS = SettingLimit("max_tag_length", 100)
MAX_NAMESPACE_CHARS = SettingLimit("max_namespace_length", 128)
SETTING_LIMITS = (MAX_CONTENT, MAX_BATCH, MAX_TAGS, MAX_TAG_CHARS, MAX_NAMESPACE_CHARS)

MAX_RESULTS = 100  # `limit` of every search
MAX_QUERY_CHARS = 10_000
MAX_ID_CHARS = 64
# A memory id as results show it to the model: its first characters (tools accept them back).
SHORT_ID_CHARS = 8
MIN_ID_PREFIX_CHARS = 4  # the shortest prefix a tool resolves to a full id
MAX_LABEL_CHARS = 256  # session_id, speaker
MAX_PATH_CHARS = 4_096
MAX_MAP_MEMORIES = 10_000  # visualize
MAX_HIGHLIGHTS = 1_000  # visualize's highlight_ids
MAX_CONTEXT = 5  # recall's context: neighbours shown on each side of a hit
# recall's expand: most memories spreading activation adds.
MAX_EXPAND = 10
MAX_HISTORY = 1_000  # memory_history's limit
MAX_GROUPS = 100  # consolidate's max_groups
MAX_BRIDGES = 500  # corpus_bridges' max_bridges
MAX_RELATION_CHARS = 64
MAX_STEPS = 20  # journey's and wander's steps
DUPLICATE_SIMILARITY = (0.7, 0.99)  # dedup_threshold and consolidate's similarity_threshold
MAX_TRAJECTORY_STEPS = 50  # build_skill's trajectory
MAX_PROCEDURE_LABEL = 64  # a procedure's name, domain, a step's tool
MAX_PROCEDURE_TEXT = 2_000  # a step's action and result, a trigger, a run's error and context

# The settings tools/list and initialize depend on: the limits the tool schemas are built from
# and the tools listed (tool_profiles.py); the handshake cache keys its answers by them.
SCHEMA_SETTINGS = (*(limit.setting for limit in SETTING_LIMITS), "tools")
MAX_COMPLETIONS = 100  # values in one completion/complete answer (the MCP spec's limit)
