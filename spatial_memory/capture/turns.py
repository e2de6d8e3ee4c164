"""What a text turn of a session leaves to remember: the person's statements, the assistant's
conclusions (pure standard library: the hooks import it when there is prose to read).

The unit is the turn, not the sentence: a statement cut out of its turn loses what it is about
("Let's do that", a list announced by a colon), and a developer's later question is answered by
what was said or concluded, whole.

- The user's turn is kept, whole, when it states something: a requirement, a fact about the
  person or the project, a preference, a decision, a correction, a value (a URL, a path, a
  name). A turn that only asks ("can you walk me through it?"), only requests an action
  ("implement the export now") or only reacts ("Looks good!") is not. Pasted terminal sessions
  are left out of the kept text (they are the tool's words, not the person's).
- The assistant's message that ends a turn (its answer: what was found, decided, built and where)
  is kept whole unless it is only narration or a pleasantry. A message in the middle of a turn
  is kept only when it states a conclusion (a root cause, a fix, a decision with its reason),
  never when it narrates what comes next ("Let me check ...", "Now I can see the issue:").
- Long turns are kept as consecutive paragraphs of at most MAX_CHUNK_CHARS, never cut inside a
  paragraph at a colon: the list or code after a colon belongs to the sentence before it.

The rules say what a statement *is* (speaker, question, request, narration, conclusion).
"""

from __future__ import annotations

import re

MIN_STATEMENT_WORDS = 3
MAX_CHUNK_CHARS = 1200
MAX_CHUNKS = 3  # of one turn
MIN_CANDIDATE_WORDS = 6  # a turn shorter than this the classifier is not asked about
MAX_REQUEST_WORDS = 9  # an imperative this short asks for an action and states nothing else

_WORD = re.compile(r"[\w'\u2019-]+")
_FENCE = re.compile(r"^\s*(```|~~~)")
# A pasted terminal line: "(venv) user@host:~/dir$ command", "PS C:\\dir> command", "$ command".
_PROMPT_LINE = re.compile(r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+:\S*\s*[$#%]|PS [A-Z]:\\[^>]*>|[$#]\s)")
# A value worth keeping even alone: a URL or remote, a path, a dotted or snake_case name, a number with a unit.
_VALUE = re.compile(
    r"(?:\w+://|git@)\S+|(?:^|\s)[~.]?/[\w.-]+/\S*|\b\w+[._]\w+[._\w]*\b|`[^`]+`|\b\d+(?:\.\d+)?\s?[a-zA-Z%]{1,5}\b"
)
_QUESTION_START = re.compile(
    r"(?i)^(?:(?:so|and|but|also|btw|hey|ok|okay|wait|hmm|now)[,\s]+)*(?:can|could|would|will|should|shall|do|does|did|is|"
    r"are|was|were|have|has|had|how|what|why|when|where|who|which|any|anything|am)\b"
)
# Verbs that open a request for an action; a short sentence opened by one asks, it does not state.
_REQUEST_START = re.compile(
    r"(?i)^(?:(?:ok|okay|now|then|so|and|please|great|good|cool|alright)[,!.\s]+)*(?:please\s+)?(?:implement|fix|do|run|make|"
    r"create|add|continue|go|proceed|try|show|check|commit|push|write|update|start|begin|test|build|read|look|open|"
    r"remove|delete|rename|move|refactor|review|explain|tell|give|help|finish|complete|resume|retry|install|deploy|"
    r"merge|undo|revert|list|summari[sz]e|analy[sz]e|investigate|debug|keep\s+going|go\s+ahead|carry\s+on)\b"
)
# Narration: the assistant saying what it is about to do or reacting, not what it found.
_NARRATION_START = re.compile(
    r"(?i)^(?:(?:now|ok|okay|good|great|perfect|excellent|alright|first|next|then|finally|so)[,!.:\s]+)*"
    r"(?:let\s+me|let's|i'll|i\s+will|i'm\s+going\s+to|i\s+am\s+going\s+to|i\s+need\s+to|i\s+should|i\s+can\s+see|"
    r"i\s+see|now\s+i|i'm\s+(?:now\s+)?(?:checking|looking|reading|running|going)|checking|looking|reading|running|"
    r"searching|waiting|moving\s+on|time\s+to|we\s+need\s+to\s+(?:check|look|see|find))\b"
    # an acknowledgement restates what the person said: "Understood, I won't ...", "Got it."
    r"|^(?:understood|noted|got\s+it|sure|will\s+do|of\s+course|absolutely|you're\s+(?:right|absolutely\s+right)|"
    r"makes\s+sense|good\s+(?:idea|point|catch)|great\s+(?:idea|question|point|catch))\b"
)
_PLEASANTRY = re.compile(
    r"(?i)^(?:(?:that's|that\s+is|this\s+is|what\s+a|very|really|such)\s+)?(?:a\s+)?(?:great|good|excellent|perfect|"
    r"nice|interesting|important|key|crucial|fantastic|wonderful|awesome|amazing|cool|brilliant)\b[\w\s!']{0,30}[!.]?$"
)
_FILLER = frozenset(
    """ok okay k thanks thank you thx ty yes yeah yep yup no nope sure cool nice great awesome good perfect
    looks sounds lgtm got it done right exactly indeed wow oh ah hmm oops sorry fine lol haha it worked
    still works working now again please go ahead continue proceed crystal clear""".split()
)
# The person telling about themselves or their ways, even inside a question.
_ABOUT_ME = re.compile(
    r"(?i)\b(?:i(?:'ve|\s+have)\s+(?:always|never|usually|been|got|already)|i\s+(?:always|usually|never|normally|"
    r"prefer|like|love|hate|use|work|need|want)|i'm\s+(?:a|an|the|using|working|on)|i\s+am\s+(?:a|an|the|using|working)|"
    r"my\s+\w+\s+(?:is|are|was|uses?))\b"
)
# A conclusion in the middle of a turn: a cause, a fix, a decision or a finding, stated.
_CONCLUSION = re.compile(
    r"(?i)\b(?:root\s+cause|the\s+(?:problem|issue|bug|cause|reason|fix|solution|culprit)\s+(?:is|was)|because|caused\s+by|"
    r"due\s+to|turns?\s+out|turned\s+out|found\s+(?:that|the)|this\s+means|which\s+means|that's\s+why|so\s+the|"
    r"(?:fixed|solved|resolved)\b|the\s+fix\b|decided|instead\s+of|rather\s+than|works?\s+(?:now|because)|confirmed|"
    r"is\s+(?:stored|written|kept|saved|located|defined|configured|set)\s+(?:in|at|as|to)|requires?|must|never|always|"
    r"(?:doesn't|does\s+not|don't|do\s+not)\s+(?:support|work|exist|allow|accept)|not\s+supported|will\s+fail|"
    r"won't\s+work|can't|cannot|(?:are|is|comes?)\s+from)\b"
)


def clean(text: str, speaker: str) -> str:
    """The turn's own words: without pasted terminal sessions (user), blank-line runs collapsed."""
    lines = text.splitlines()
    kept: list[str] = []
    pasted = False
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
            kept.append(line)
            continue
        if speaker == "user" and not in_fence:
            if _PROMPT_LINE.match(line):
                pasted = True  # the prompt line and the output under it, to the next blank line
                continue
            if pasted:
                if line.strip():
                    continue
                pasted = False
        kept.append(line)
    return re.sub(r"\n\s*\n(?:\s*\n)+", "\n\n", "\n".join(kept)).strip()


def sentences_of(text: str) -> list[str]:
    """Sentences and list items of a text (code blocks left out), for judging what it does."""
    from ..text.sentences import sentences  # linear segmentation; imported with the first prose

    return [" ".join(text[s.start : s.end].split()) for s in sentences(text)]


def is_question(sentence: str) -> bool:
    s = sentence.rstrip(" )\"'`*_")
    return s.endswith("?") or bool(_QUESTION_START.match(s) and "?" in s)


def is_request(sentence: str) -> bool:
    return bool(_REQUEST_START.match(sentence)) and len(_WORD.findall(sentence)) <= MAX_REQUEST_WORDS


def is_filler(sentence: str) -> bool:
    words = [w.lower() for w in _WORD.findall(sentence)]
    return not words or all(w in _FILLER for w in words) or bool(_PLEASANTRY.match(sentence.strip()))


def is_narration(sentence: str) -> bool:
    return bool(_NARRATION_START.match(sentence.strip())) or is_filler(sentence)


def states_something(sentence: str) -> bool:
    """A sentence of the user's that tells (not asks, requests or reacts); a question that says
    something about the person on the way ("I've always created the repo first - can you ...?")
    tells too."""
    if is_filler(sentence):
        return False
    if is_question(sentence) or is_request(sentence):
        return bool(_ABOUT_ME.search(sentence))
    return len(_WORD.findall(sentence)) >= MIN_STATEMENT_WORDS or bool(_VALUE.search(sentence))


def concludes(sentence: str) -> bool:
    """A sentence of the assistant's that states a conclusion rather than narrating."""
    return not is_narration(sentence) and not is_question(sentence) and bool(_CONCLUSION.search(sentence))


def chunks(text: str) -> list[str]:
    """The text as consecutive runs of whole paragraphs of at most MAX_CHUNK_CHARS (a paragraph
    longer than that is cut at a line end, else at the limit), at most MAX_CHUNKS of them; a
    paragraph ending in a colon stays with the one after it."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    merged: list[str] = []
    for paragraph in paragraphs:
        if merged and merged[-1].rstrip().endswith(":"):
            merged[-1] += "\n\n" + paragraph
        else:
            merged.append(paragraph)
    out: list[str] = []
    for paragraph in merged:
        while len(paragraph) > MAX_CHUNK_CHARS:
            cut = paragraph.rfind("\n", 0, MAX_CHUNK_CHARS)
            cut = cut if cut > MAX_CHUNK_CHARS // 2 else MAX_CHUNK_CHARS
            out.append(paragraph[:cut].rstrip())
            paragraph = paragraph[cut:].lstrip()
        if out and len(out[-1]) + len(paragraph) + 2 <= MAX_CHUNK_CHARS:
            out[-1] += "\n\n" + paragraph
        elif paragraph:
            out.append(paragraph)
    return out[:MAX_CHUNKS]


def user_turn(text: str) -> list[str]:
    """What the user's turn leaves: its own words, whole, when one sentence states something."""
    own = clean(text, "user")
    if not own or not any(states_something(s) for s in sentences_of(own) or [own]):
        return []
    return chunks(own)


def assistant_turn(text: str, *, final: bool) -> list[str]:
    """What an assistant message leaves: a turn's answer whole; a message in the middle of a turn
    only when it concludes something (then whole, its narration sentences included)."""
    own = clean(text, "assistant")
    said = sentences_of(own) or [own]
    if final:
        telling = [s for s in said if not is_narration(s) and not is_question(s)]
        if not telling or sum(len(s) for s in telling) < 40:
            return []
        return chunks(own)
    if not any(concludes(s) for s in said):
        return []
    return chunks(own)


def candidate(text: str, speaker: str) -> list[str]:
    """A turn the rules left that could still hold a statement (enough words, not only narration):
    its first chunk, for the store's classifier (capture/memorable.py) to admit or drop."""
    own = clean(text, speaker)
    said = sentences_of(own)
    if len(own.split()) < MIN_CANDIDATE_WORDS or all(is_narration(s) or is_question(s) for s in said):
        return []
    return chunks(own)[:1]
