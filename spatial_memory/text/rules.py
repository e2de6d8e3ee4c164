"""The rule table of extraction: pattern families, their base confidences, the phrases they must not
fire on, and the global cues that nudge a sentence's confidence (pure standard library).

It is long because it is a table, which reads best in one place. Every regular expression is free of
nested quantifiers and applied to one sentence at a time, so scoring is linear in the input size.
"""

from __future__ import annotations

import re

from .sentences import Sentence

__all__ = ["WORD_RE", "score_sentence"]

# Scoring regexes are applied to the lower-cased sentence and compiled
# without re.IGNORECASE (faster in CPython: docs/BENCHMARKS.md); `_cs` marks the few
# case-sensitive ones that are applied to the original sentence.
_CASE_SENSITIVE: set = set()
_UPPER_LITERAL_RE = re.compile(r"\\.|\[[^\]]*\]|\(\?P[<=]")


def _rx(pattern: str) -> re.Pattern:
    """Compile a pattern meant for lower-cased text (no upper-case literals)."""
    assert not any(ch.isupper() for ch in _UPPER_LITERAL_RE.sub("", pattern)), pattern
    return re.compile(pattern)


def _cs(pattern: str) -> re.Pattern:
    """Compile a case-sensitive pattern applied to the original text."""
    rx = re.compile(pattern)
    _CASE_SENSITIVE.add(rx)
    return rx


_NUM = r"\d+(?:[.,]\d+)*"

# (pattern type, base confidence, regex). Several entries per type allowed.
_RULES = [
    # ---- explicit
    (
        "explicit",
        0.85,
        _rx(
            r"\bremember(?:\s+that)?\b|\bnote\s+to\s+self\b|\bdon'?t\s+forget\b|\bdo\s+not\s+forget\b"
            r"|\bkeep\s+in\s+mind\b|\btil\b|\bfor\s+future\s+reference\b|\bfyi\b|\bnb\b:"
            r"|^(?:note|reminder|tip)\s*:|\bworth\s+remembering\b"
        ),
    ),
    ("explicit", 0.7, _rx(r"\btodo\b|\bfixme\b|\bheads[\s-]up\b|\bpsa\b")),
    # ---- important
    ("important", 0.85, _cs(r"\bIMPORTANT\b|\bCRITICAL\b|!!!|\bWARNING\b|\bBREAKING\b")),
    ("important", 0.85, _rx(r"^(?:important|critical|warning|breaking(?:\s+change)?|caution|danger)\s*:")),
    (
        "important",
        0.75,
        _rx(
            r"\b(?:important|critical|crucial|essential)\b|\bkey\s+point\b|\bmust\s+not\b|\bnever\s+ever\b"
            r"|\bunder\s+no\s+circumstances\b|\bbreaking\s+change\b"
        ),
    ),
    # ---- decision
    ("decision", 0.9, _rx(r"^(?:decision|decided|resolution|outcome)\s*:")),
    (
        "decision",
        0.8,
        _rx(
            r"\b(?:we|they|i|team|everyone|group|committee|management)\b[^.?!]{0,30}?\b(?:decided|agreed|chose|opted|settled\s+on|selected|picked)\b"
            r"|\b(?:decided|agreed)\s+(?:to|on|that)\b|\bsettled\s+on\b|\bopted\s+(?:for|to)\b"
            r"|\bgoing\s+(?:with|forward\s+with)\b|\b(?:we|we'll|we\s+will)\s+(?:use|go\s+with|adopt|standardi[sz]e\s+on)\b"
            r"|\bthe\s+decision\s+(?:is|was)\b|\bswitch(?:ed|ing)?\s+(?:from\s+[^.?!]{1,60}?\s+)?to\b"
            r"|\bmigrat(?:ed|ing|e)\s+(?:from\s+[^.?!]{1,60}?\s+)?to\b|\bdropped\s+support\b|\bchose\b"
        ),
    ),
    ("decision", 0.6, _rx(r"\b(?:approved|signed\s+off|green[\s-]?lit|we(?:'ll|\s+will|\s+are\s+going\s+to)\s+\w+)\b")),
    # ---- solution
    (
        "solution",
        0.8,
        _rx(
            r"\bthe\s+(?:fix|solution|workaround|remedy|answer|trick|resolution)\s+(?:was|is|here\s+is|would\s+be)\b"
            r"|\bthe\s+(?:fix|solution|workaround|remedy|answer|resolution)\s+(?:to|for)\s+[^.?!]{1,60}?\s+(?:was|is|would\s+be)\b"
            r"|^(?:fix|solution|workaround|resolution)\s*:|\b(?:fixed|solved|resolved|worked\s+around|mitigated)\s+(?:it\s+|this\s+)?by\b"
            r"|\bto\s+(?:fix|solve|resolve|work\s+around|avoid)\s+(?:this|it|that|the\s+\w+)\s*,"
            r"|\bthe\s+trick\s+is\b|\b(?:fixes|fixed|resolves|resolved|solves|solved|avoids|avoided|prevents|prevented|mitigates|works\s+around)\s+(?:it|this|that|the\s+(?:issue|problem|error|bug|crash|leak))\b"
            r"|\bfixed\s+in\s+v?\d"
        ),
    ),
    (
        "solution",
        0.6,
        _rx(
            r"\b(?:fixed|resolved|solved|workaround|fix\s+is)\b|^now,?\s+(?:we|it|the\s+\w+)\s+(?:\w+\s+){0,2}?(?:catch(?:es)?|handles?|retr(?:y|ies)|checks?|uses?|validates?|falls?\s+back|returns?|skips?|waits?|ignores?)\b"
        ),
    ),
    # ---- error
    (
        "error",
        0.8,
        _rx(r"^(?:error|fatal|panic)\s*:|\btraceback\b|\bseg(?:mentation\s+)?faults?(?:ed)?\b|\bcore\s+dump"),
    ),
    ("error", 0.8, _cs(r"\b[A-Z]\w*(?:Error|Exception)\b|\bE[A-Z]{4,}\b")),
    (
        "error",
        0.7,
        _rx(
            r"\b(?:fails?|failed|failing|crash(?:es|ed|ing)?|throws?|threw|raises?|raised|panics?|hangs?|times?\s+out|timed\s+out)\b[^.?!]{0,80}?\b(?:when|with|if|on|for|because|after)\b"
            r"|\b(?:http|status(?:\s+code)?)\s*5\d\d\b|\b5\d\d\s+(?:errors?|internal\s+server|bad\s+gateway|service\s+unavailable|gateway\s+timeout)\b|\berror\s+(?:message|code)\b|\b(?:timeout|deadlock|stack\s+overflow|out\s+of\s+memory|oom)\b"
            r"|\breturns?\s+(?:http\s+)?[45]\d\d\b"
        ),
    ),
    ("error", 0.55, _rx(r"\b(?:error|exception|crash(?:es|ed)?|fails?|failed|failure)\b")),
    # ---- insight
    (
        "insight",
        0.8,
        _rx(
            r"\b(?:learned|learnt|discovered|found\s+out|figured\s+out)\s+(?:that|how|the\s+hard\s+way)\b|\bturns?\s+out\b|\bturned\s+out\b"
            r"|\brealized\b|\brealised\b|\bkey\s+(?:insight|takeaway|learning)\b|\blessons?\s+learned\b|\broot\s+cause\b|\btakeaway\b"
        ),
    ),
    (
        "insight",
        0.55,
        _rx(
            r"\b(?:because|caused\s+by|due\s+to|the\s+reason\s+(?:is|was)|that'?s\s+why|which\s+means|so\s+that)\b|\bit\s+seems\s+that\b"
        ),
    ),
    # ---- preference
    (
        "preference",
        0.8,
        _rx(
            r"\b(?:i|we)\s+(?:really\s+|strongly\s+|generally\s+)?(?:prefer|like|love|hate|dislike|enjoy|can'?t\s+stand)\b"
            r"|\bmy\s+(?:favou?rite|preferred)\b|\bi'?d\s+rather\b|\bi\s+would\s+rather\b|\bplease\s+(?:always|never|don'?t|do\s+not|use|keep)\b"
            r"|\b(?:i'?m|i\s+am)\s+(?:allergic|vegetarian|vegan)\b"
        ),
    ),
    (
        "preference",
        0.65,
        _rx(r"\b(?:prefers|likes|loves|hates|dislikes|favou?rite|rather\s+than|is\s+the\s+best|the\s+best\s+part)\b"),
    ),
    # ---- pattern
    (
        "pattern",
        0.75,
        _rx(
            r"^(?:always|never|do\s+not|don'?t|avoid|prefer)\b|\bbest\s+practices?\b|\bconvention\s+is\b|\bby\s+convention\b|\brule\s+of\s+thumb\b"
            r"|\bprefer\s+\S+(?:\s+\S+){0,3}\s+(?:over|to)\b|\bwe\s+(?:always|never|use\s+\S+(?:\s+\S+){0,3}\s+for)\b|\bas\s+a\s+rule\b"
        ),
    ),
    ("pattern", 0.65, _rx(r"\b(?:always|never)\b")),
    # ---- requirement
    (
        "requirement",
        0.75,
        _rx(
            r"^(?:requirements?|required|must)\s*:|\bthe\s+requirement\s+is\b|\bdeadline\s+is\b|\bdue\s+(?:on|by|at)\b|\bis\s+due\b"
        ),
    ),
    (
        "requirement",
        0.65,
        _rx(
            r"\bmust\b|\bneeds?\s+(?:to|a|an|the|all|at\s+least)\b|\bat\s+the\s+latest\b|\b(?:has|have)\s+to\b|\b(?:is|are)\s+required\b|\brequired\b|\brequires?\b"
            r"|\bshould\s+always\b|\bminimum\s+(?:supported\s+)?(?:version|requirement)\b|\bby\s+(?:the\s+)?end\s+of\s+(?:the\s+)?(?:day|week|month|quarter|year|sprint)\b"
            r"|\bat\s+least\s+\d|\bwants?\b[^.?!]{1,60}?\bby\b"
        ),
    ),
    # ---- problem
    (
        "problem",
        0.7,
        _rx(
            r"\bthe\s+(?:problem|issue|bug|catch)\s+(?:is|was)\b|\bis\s+broken\b|\b(?:are|was|were)\s+broken\b|\b(?:doesn'?t|does\s+not|don'?t|won'?t|isn'?t)\s+work(?:ing)?\b"
            r"|\bkeeps?\s+(?:failing|crashing|breaking)\b|\bblocked\s+by\b|\bran\s+out\s+of\b|\brunning\s+out\s+of\b|\bknown\s+(?:bug|issue|problem)\b"
            r"|\b(?:happens|occurs)\s+(?:on\s+\S+\s+)?(?:when|if|after|only)\b|\b(?:wrong|incorrect|incorrectly|broken|corrupt(?:ed)?|flaky)\b|\bleaks?\b|\bregression\b"
            r"|\bsilently\b|\b(?:is|are|gets?|got)\s+(?:ignored|lost|dropped|truncated|duplicated|skipped)\b|\breproduc(?:ed|ible)\s+(?:on|in|with)\b"
        ),
    ),
    ("problem", 0.6, _rx(r"^actual(?:\s+(?:result|behaviou?r|outcome))?\s*:")),
    ("problem", 0.55, _rx(r"\bis\s+(?:too\s+)?slow\b|\bslow\b|\bbug\b|\bissue\b|\bproblem\b|\bdeprecated\b")),
]

# Imperative guidance ("Use f-strings, not % formatting"); only for
# sentences of >= 5 words so that repro steps ("Click Export") are ignored.
_IMPERATIVE_RE = _rx(
    r"^(?:(?:then|also|and|just|please|so)\s+)?(?:use|keep|avoid|prefer|make\s+sure|ensure|write|name|put|store|run|set|add|pin|limit|book|bring"
    r"|copy|call|check|wrap|split|log|document|test|backup|back\s+up|rotate|restart|reboot|update|upgrade|install|configure|enable|disable|turn)\b"
)

# Highest base first: the first rule that matches is the best one.
_RULES.sort(key=lambda r: -r[1])
_DEF_MAX = 0.75
_FACT_MAX = 0.7

# definition: short term subject + copula/definition verb
_DEF_STRONG_RE = _rx(
    r"\b(?:stands\s+for|refers\s+to|is\s+defined\s+as|are\s+defined\s+as|defined\s+as|is\s+short\s+for|is\s+an?\s+(?:abbreviation|acronym)\b)"
)
_DEF_SUBJECT_RE = re.compile(
    r"(?:(?:the|a|an|our|their|my)\s+)?(?P<term>[\w`*'\"./\-]+(?:\s+[\w`*'\"./\-]+){0,3}?)\s+(?P<verb>is|are|means|mean)\s+(?P<obj>a|an|the|one|any|when|how|\w)",
    0,
)
_DEF_LABEL_RE = _cs(r"(?:\*\*[^*\n]{1,40}\*\*|`[^`\n]{1,40}`)\s*(?:\([^)\n]{1,20}\))?\s*(?::|\u2014|-{1,2}|=)\s*\S")
_PRONOUNS = frozenset(
    "it this that there he she they we i you which what who here everything something nothing one".split()
)

# fact signals
_FACT_NUM_UNIT_RE = _rx(
    r"\$\s?\d|\b"
    + _NUM
    + r"\s?(?:%|k\b|m\b|ms\b|s\b|secs?\b|seconds?\b|minutes?\b|mins?\b|hours?\b|hrs?\b|h\b|days?\b|weeks?\b|months?\b|years?\b"
    r"|kb\b|mb\b|gb\b|tb\b|km\b|mi\b|miles?\b|kg\b|px\b|chars?\b|characters\b|requests?\b|rps\b|qps\b|usd\b|eur\b|gbp\b|users?\b|items?\b|rows?\b|attempts?\b|retries\b|times\b|x\b)"
)
_FACT_NUM_NOUN_RE = _rx(r"(?<![\w.])" + _NUM + r"\s+(?:[a-z\-]+\s+)?[a-z]{3,}s\b")
_FACT_RATE_RE = _rx(
    r"\bper\s+[a-z]{2,}\b|\b(?:max|min|up\s+to|at\s+most|at\s+least|no\s+more\s+than|maximum|minimum)\s+\d|\bevery\s+(?:\d+\s+)?(?:second|minute|hour|day|week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|night|morning)s?\b"
)
_FACT_DATE_RE = _rx(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?\s+\d{1,4}(?:st|nd|rd|th)?\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|wed|thu|fri|sat|sun)s?\b|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm)\b"
    r"|\b(?:q[1-4]|h[12])\b|\b(?:utc|cet|pst|est|gmt)\b|\bbirthday\b|\banniversary\b"
)
_FACT_VERSION_RE = _rx(
    r"\bv?\d+\.\d+(?:\.\d+)*(?:\.x|\+)?\b|\b(?:python|node|java|go|ruby|php|postgres(?:ql)?|mysql|redis|kafka|elasticsearch)\s+\d"
)
_FACT_TECH_RE = _cs(
    r"`[^`\n]+`|https?://\S+|(?:~|\.{0,2})?/[\w.\-]+/[\w./\-]*|\b[\w\-]+\.(?:py|js|ts|toml|json|ya?ml|md|txt|cfg|ini|sh|go|rs|java|rb|sql|html|lock|env)\b"
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z]{2,}[A-Z0-9]*=\S+|\b[Pp]ort\s+\d+|\b\w+\.(?:example|com|org|net|io|dev|local|internal)\b"
    r"|\b[a-z]+[A-Z]\w*\(|\b[a-z_]+\.[a-z_]+\(|\b\w+\(\)",
)
_FACT_VERB_RE = _rx(
    r"\b(?:is|are|was|were|has|have|had|runs?|uses?|lives?|stores?|writes?|reads?|returns?|allows?|gets?|takes?|happens?|starts?|ends?|closes?"
    r"|expires?|rotates?|consumes?|listens?|supports?|accepts?|costs?|weighs?|contains?|points?|sends?|calls?|depends?|works?|goes|moved|located"
    r"|deprecated|hosted|deployed|stored|signed|due|assumes?|caused|evicts?|override|overrides|means|owns?|handles?|limits?|defaults?"
    r"|(?:can|must|should|will)\s+(?:also\s+)?be|set|configured|configurable|done|prefixed|installed|enabled|disabled|located"
    r"|retries|retried|expire|expired|needs?|needed|keeps?|kept|ran|run|gets?|got|gives?|gave|makes?|made|pays?|paid|lived?|works?|worked"
    r"|started|finished|opens?|opened|closed|lasts?|lasted|took|grows?|grew|fell|rose|dropped|increased|decreased|reduced|saves?|saved"
    r"|scales?|scaled|loads?|loaded|fetches|fetched|syncs?|synced|backs\s+up|pooled|cached|limited|capped|measured|peaks?|peaked|averages?|averaged)\b"
)
_COPULA_START_RE = re.compile(
    r"(?:(?:the|our|my|their|his|her|its|your)\s+)?[\w'\-./`]+(?:\s+[\w'\-./`]+){0,4}?\s+(?:is|are|was|were)\s+(?:on|in|at|under|behind|located|stored|kept|due|set|signed|read-only|every|until|from)\b",
    0,
)

# "Oil type is 5W-30", "the timeout = 30": short subject, copula, a value with a digit
_COPULA_VALUE_RE = re.compile(
    r"(?:(?:the|our|my|their|its|your)\s+)?[\w'\-./`]+(?:\s+[\w'\-./`]+){0,3}?\s+(?:is|are|was|were|=|equals)\s+(?:about\s+|around\s+|roughly\s+|~)?[$\w\-.]*\d",
    0,
)

# negative cues
_QUESTION_START_RE = _rx(
    r"^(?:(?:so|and|but|also|btw|hey|ok|okay)[,\s]+)?(?:should|shall|can|could|would|will|do|does|did|is|are|was|were|have|has|had|how|what|why|when|where|who|which"
    r"|anyone|any\s+idea|any\s+thoughts|wdyt|thoughts|what\s+if|is\s+there|are\s+there|may\s+i|mind\s+if)\b"
)
_HEDGE_RE = _rx(
    r"\b(?:maybe|perhaps|possibly|probably|might|not\s+sure|unsure|i\s+think|i\s+guess|i\s+suppose|i\s+wonder|idk|dunno|kinda|sort\s+of|we\s+could|could\s+try|worth\s+a\s+(?:try|spike|look))\b"
)
_FILLER_WORDS = frozenset(
    """
    ok okay k kk thanks thank thx ty tyvm np no problem lol lmao rofl haha hahaha hehe yep yup yes yeah ya no nope sure cool nice great
    awesome sounds good looks lgtm morning good hi hello hey all everyone team bye see you tomorrow later cheers got it will do done
    makes sense welcome brb one sec right agreed indeed wow oh ah ahh hmm oops sorry gm gn night evening afternoon +1 so much a lot
    in advance for the help again perfect exactly true fine now to know joining happy hacking fun have pleasure glad thumbs up ack
    """.split()
)
_FILLER_PHRASE_RE = _rx(
    r"^(?:thanks|thank\s+you|thx|ty|sounds\s+good|looks\s+good|makes\s+sense|good\s+to\s+know|got\s+it|will\s+do|no\s+worries|have\s+fun|happy\s+\w+ing|see\s+you|good\s+(?:morning|night|evening|afternoon)|welcome|hi|hello|hey)\b"
)
_CHATTY_RE = _rx(
    r"^(?:ah+|oh+|ooh+|hm+|wow|yay|meh|welp|whoa)\b|\b(?:lol|lmao|rofl|haha\w*|hehe|ugh|omg|xd)\b|:\)|:\(|:d\b|;\)|[\U0001F300-\U0001FAFF\u2600-\u27BF]"
)
_NOISE_RE = re.compile(
    r"^(?:[\w-]+-by:|co-authored-by:|closes\s+#|fixes\s+#|refs?\s+#|merge\s+(?:branch|pull\s+request|remote)|revert\s+\"|this\s+reverts\s+commit|signed-off|change-id:)"
    r"|^see\s+(?:\S+\s+){0,6}?for\s+(?:more\s+)?(?:details|info|information)\b",
    0,
)
_BOOST_RE = _rx(r"\b(?:fyi|til|todo|important|remember\s+that|note\s*:)")
WORD_RE = re.compile(r"[\w'\u2019-]+")
_MARKER_PREFIX_RE = re.compile(
    r"^(?:note(?:\s+to\s+self)?|decision|important|error|fyi|til|remember|workaround|fix|solution|root\s+cause|lesson\s+learned|key\s+point|breaking|rule\s+of\s+thumb)\s*:",
    0,
)


def _fact_score(s: str, ls: str, words: int) -> float:
    """Score a plain statement of fact (numbers, dates, versions, code...)."""
    signals = 0
    copula_value = bool(_COPULA_VALUE_RE.match(ls))
    if copula_value:
        signals += 1
    if _FACT_NUM_UNIT_RE.search(ls) or _FACT_NUM_NOUN_RE.search(ls):
        signals += 1
    if _FACT_RATE_RE.search(ls):
        signals += 1
    if _FACT_DATE_RE.search(ls):
        signals += 1
    if _FACT_VERSION_RE.search(ls):
        signals += 1
    if _FACT_TECH_RE.search(s):
        signals += 1
    copula = copula_value or bool(_COPULA_START_RE.match(ls))
    verb = bool(_FACT_VERB_RE.search(ls))
    if not signals and not copula:
        return 0.0
    score = 0.3 + 0.12 * min(signals, 3)
    if verb:
        score += 0.1
    if copula:
        score += 0.1
    if words < 5:
        score -= 0.05
    return min(score, _FACT_MAX)


def _definition_score(ls: str, raw: str, unit_kind: str) -> float:
    """Score "TERM stands for / refers to / is a ..." and glossary items."""
    m = _DEF_STRONG_RE.search(ls)
    if m:
        subj = ls[: m.start()].split()
        if 1 <= len(subj) <= 5 and subj[0] not in _PRONOUNS:
            return 0.75
        return 0.5
    if _DEF_LABEL_RE.match(raw):
        return 0.65 if unit_kind == "list" else 0.55
    m = _DEF_SUBJECT_RE.match(ls)
    if m:
        term = m.group("term")
        first = term.split()[0].strip("`*'\"")
        if first in _PRONOUNS or first in ("there", "what", "how"):
            return 0.0
        verb = m.group("verb")
        obj = m.group("obj")
        if verb.startswith("mean"):
            return 0.65
        if obj in ("a", "an", "the", "one", "any"):
            return 0.6
    return 0.0


def score_sentence(content: str, raw: str, sent: Sentence) -> tuple:
    """Return (pattern_type, confidence) for one cleaned sentence."""
    s = content
    ls = s.lower()
    if _NOISE_RE.search(ls):
        return ("", 0.0)
    low_words = WORD_RE.findall(ls)
    words = len(low_words)
    if words == 0:
        return ("", 0.0)
    if all(w in _FILLER_WORDS for w in low_words):
        return ("", 0.0)
    if words <= 6 and _FILLER_PHRASE_RE.match(ls):
        return ("", 0.0)

    best_type, best = "", 0.0
    for ptype, base, rx in _RULES:  # sorted by decreasing base
        if rx.search(s if rx in _CASE_SENSITIVE else ls):
            best_type, best = ptype, base
            break
    if best < 0.6 and words >= 5 and _IMPERATIVE_RE.match(ls):
        best_type, best = "pattern", 0.6
    if best < _DEF_MAX:
        d = _definition_score(ls, raw, sent.unit.kind)
        if d > best:
            best_type, best = "definition", d
    if best < _FACT_MAX:
        f = _fact_score(s, ls, words)
        if f > best:
            best_type, best = "fact", f
    if not best_type:
        return ("", 0.0)

    conf = best
    # explicit markers boost whatever was matched
    if _MARKER_PREFIX_RE.match(ls):
        conf += 0.05
    if best_type not in ("explicit", "important") and _BOOST_RE.search(ls):
        conf += 0.1
    # questions are rarely memories
    stripped = s.rstrip(" )\"'`*_")
    if stripped.endswith("?") or ("?" in s and _QUESTION_START_RE.match(ls)):
        conf -= 0.45
    if _HEDGE_RE.search(ls):
        conf -= 0.25
    if _CHATTY_RE.search(ls):
        conf -= 0.2
    # length sanity
    if words < 3:
        conf -= 0.3
    elif words < 4:
        conf -= 0.15
    elif words > 60:
        conf -= 0.2
    # headings and titles are labels of content, not statements
    if sent.unit.kind == "heading":
        conf -= 0.35
    elif sent.unit.title and sent.first:
        conf -= 0.3
    return (best_type, max(0.0, min(1.0, round(conf, 3))))
