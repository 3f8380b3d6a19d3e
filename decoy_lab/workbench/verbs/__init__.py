"""The workbench's verbs, declared once for the notebook (`%decoy …`) and the shell (`decoy-lab …`).

Each `Verb` lists its arguments (`Arg`), the front ends that have it, and says its own one-line
usage; the translations both front ends share live here too (what `save` and `edit` send, the
hint that answers an error, the closest name to a typo, what Tab offers). `magics.py` and
`commands.py` build their parsers from this table and only render. Nothing here imports
IPython, and parsing never exits: a mistake is a `UsageProblem` that names the verb, says what
was wrong in one line and suggests the closest word.

    table.py       Arg, Verb, the VERBS table, BY_NAME, the front ends and their prompts
    parsing.py     UsageProblem, closest, parse (argparse that raises), find_verb, check
    translate.py   connect_url, topic_value, save_options, edit_changes, dump_key, front_words, hint, value_suggestion
    completion.py  complete: what Tab offers
    accountwords.py  the account verbs' words: ids by their start, secrets masked, where an unlock
                   stands, what to reuse after an unknown outcome, what a burn asks first, each
                   burned or paused address and imported row

Both front ends import the package (`from decoy_lab.workbench import verbs`), not the modules.
"""

from __future__ import annotations

from decoy_lab.workbench.verbs.accountwords import (
    BURN_MAX,
    IMPORT_AGAIN,
    ImportRun,
    account_changes,
    account_id,
    account_updated,
    batch_values,
    burn_batch_resend,
    burn_list_warning,
    burn_said,
    burn_targets,
    burn_warning,
    burned_values,
    confirmed,
    confirmed_count,
    created_values,
    decoy_changes,
    decoy_id,
    decoy_ids,
    deleted_said,
    edit_said,
    field_id,
    import_records,
    import_rows,
    import_said,
    import_text,
    import_values,
    linked_address,
    linked_burned,
    masked,
    named_lines,
    pause_said,
    problems_said,
    unconfirmed,
    unknown_said,
    unlock_said,
    updated_said,
)
from decoy_lab.workbench.verbs.completion import complete
from decoy_lab.workbench.verbs.parsing import UsageProblem, add_arguments, check, closest, find_verb, parse
from decoy_lab.workbench.verbs.table import (
    ACCOUNT_VERBS,
    ADDRESS_STATUSES,
    BOTH,
    BY_NAME,
    DUMP_KINDS,
    NOTEBOOK,
    ON_OFF,
    ONLY_NOTEBOOK,
    ONLY_SHELL,
    PERMISSIONS,
    PROMPT,
    SET_STATUSES,
    SHELL,
    VERBS,
    Arg,
    Verb,
    usage,
    verbs_for,
)
from decoy_lab.workbench.verbs.translate import (
    connect_url,
    dump_key,
    edit_changes,
    front_words,
    hint,
    save_options,
    topic_value,
    value_suggestion,
)

__all__ = [
    "ACCOUNT_VERBS",
    "ADDRESS_STATUSES",
    "BOTH",
    "BURN_MAX",
    "BY_NAME",
    "DUMP_KINDS",
    "IMPORT_AGAIN",
    "NOTEBOOK",
    "ONLY_NOTEBOOK",
    "ONLY_SHELL",
    "ON_OFF",
    "PERMISSIONS",
    "PROMPT",
    "SET_STATUSES",
    "SHELL",
    "VERBS",
    "Arg",
    "ImportRun",
    "UsageProblem",
    "Verb",
    "account_changes",
    "account_id",
    "account_updated",
    "add_arguments",
    "batch_values",
    "burn_batch_resend",
    "burn_list_warning",
    "burn_said",
    "burn_targets",
    "burn_warning",
    "burned_values",
    "check",
    "closest",
    "complete",
    "confirmed",
    "confirmed_count",
    "connect_url",
    "created_values",
    "decoy_changes",
    "decoy_id",
    "decoy_ids",
    "deleted_said",
    "dump_key",
    "edit_changes",
    "edit_said",
    "field_id",
    "find_verb",
    "front_words",
    "hint",
    "import_records",
    "import_rows",
    "import_said",
    "import_text",
    "import_values",
    "linked_address",
    "linked_burned",
    "masked",
    "named_lines",
    "parse",
    "pause_said",
    "problems_said",
    "save_options",
    "topic_value",
    "unconfirmed",
    "unknown_said",
    "unlock_said",
    "updated_said",
    "usage",
    "value_suggestion",
    "verbs_for",
]
