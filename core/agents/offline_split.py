"""Offline decomposition of a request into sub-requests: PtR's stub step without an LLM.

A deterministic heuristic, not a language model. It splits a query into clauses, drops pure
context ("I'm a fitness enthusiast."), and names each remaining clause verb_object. It stands in
for the LLM stub writer when no key is set, and it is a baseline in its own right: how much of
PtR's multi-tool gain comes from splitting the request alone.

The rules in brief:
- Sentences, then clauses at ";" and at coordinators ("and", "also", "then", "as well as", ":",
  a bare comma, ...) only when a request verb or frame follows, so noun lists ("clubs, managers,
  and referees") stay one need.
- A clause is a request when it opens with a request frame ("can you", "please", "it would be
  great if you could", a question word) or an imperative verb ("hard"), or with a wish ("I want",
  "I need", "I'm interested in": "soft").
- A soft clause is motivation, not a need, when it states a goal ("I want to buy a tracker")
  beside a direct request, or when it comes before the first direct request and a later request
  mostly restates it; a soft clause that restates the previous need elaborates it. Clauses marked
  "also" / "additionally" are always new needs.
- Qualifiers ("Please include ...") and clauses whose object is only a pronoun ("fetch that")
  join the previous need; an anaphoric object ("check its reviews") borrows the previous key noun.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

MAX_NAME_WORDS = 4
_OBJECT_CHARS = 600  # an object is read this far: names use a few words, overlap tests a few dozen
_MAX_WORD_CHARS = 24  # longer "words" are IDs or noise; a name keeps their start
_MAX_COORDINATORS = 200  # per sentence; the rest of a longer run-on sentence stays in its last clause
_MAX_UNITS_PER_PART = 50  # keeps pathological inputs linear: later clauses cannot add parts anyway


@dataclass(frozen=True)
class SubRequest:
    """One functional sub-need: the cleaned clause (the reasoning) and a hypothesised function name."""

    text: str
    name: str


# ---------------------------------------------------------------- vocabulary

def _ing(verb: str) -> str:
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye")):
        return verb[:-1] + "ing"
    if verb in _DOUBLING:
        return verb + verb[-1] + "ing"
    return verb + "ing"


_DOUBLING = frozenset("get let set shop plan stop map chat scan ship tag log run put swap sum drop".split())

# Verbs a request can open with; the value is the verb the name uses (None: the verb itself).
_VERB_NAMES: dict[str, str | None] = {
    **dict.fromkeys("provide give tell show fetch retrieve obtain gather collect access display see know learn "
                    "read inform bring pull grab return present supply deliver acquire procure view have receive "
                    "describe explain get".split(), "get"),
    **dict.fromkeys("suggest recommend propose advise".split(), "recommend"),
    **dict.fromkeys("find locate discover explore identify seek hunt browse".split(), "find"),
    **dict.fromkeys("verify confirm".split(), "verify"),
    **dict.fromkeys("calculate compute".split(), "calculate"),
    **dict.fromkeys("make build design produce create".split(), "create"),
    **dict.fromkeys("buy purchase".split(), "buy"),
    **dict.fromkeys("book reserve".split(), "book"),
    "analyse": "analyze", "summarise": "summarize", "categorise": "categorize",
    **dict.fromkeys(
        "search check lookup list convert translate send generate extract validate analyze compare determine "
        "detect summarize shorten scrape recognize parse encode decode encrypt decrypt transcribe transliterate "
        "register subscribe cancel delete remove add update upload download estimate evaluate assess measure "
        "compile track monitor trace classify categorize rank sort filter order count paraphrase rewrite correct "
        "spell proofread moderate scan capture screenshot record play stream watch listen visit research "
        "investigate study review rate forecast predict simulate plan organize arrange rent hire sell pay transfer "
        "exchange share post publish email schedule remind notify alert define outline resize crop compress edit "
        "modify change save store geocode route navigate ping resolve test run execute query call invoke "
        "authenticate retrieve try match print tag mark map set open unshorten expand hash synthesize pronounce "
        "include ensure use limit specify mention exclude format keep help assist look let".split(), None),
}
# Words that are verbs or nouns: a verb only when a determiner, pronoun or the like follows.
_AMBIGUOUS = frozenset(
    "list search show book order review rate record stream download upload check plan watch play report "
    "schedule match track post update share access return sort filter help look map set count visit view "
    "design process email test request query scan monitor trace forecast rank tag print mark use limit change "
    "exchange transfer pay rent store save capture route edit run hash spell study research present deliver "
    "supply purchase sell call display open keep order try format".split())
_VERB_FOLLOWERS = frozenset(
    "the a an all any some me us my our your their his her its them it this that these those for if whether up "
    "out into what how which who where when each every both more new latest recent current top popular "
    "available random specific several few most".split())
_VERB_FORMS: dict[str, str] = {}
for _v in _VERB_NAMES:
    _VERB_FORMS[_v] = _v
    _VERB_FORMS.setdefault(_ing(_v), _v)

# Name verbs that ask a tool for something; a wish with any other verb states a goal.
_RETRIEVAL = frozenset(
    "get find search lookup check verify validate calculate convert translate generate recommend download upload "
    "track estimate compare detect extract count list send shorten scrape predict forecast summarize analyze "
    "transcribe transliterate encode decode encrypt decrypt geocode screenshot capture resize crop compress "
    "paraphrase rewrite correct proofread spell classify categorize rank monitor scan moderate ping resolve hash "
    "unshorten expand synthesize pronounce book register subscribe cancel delete remove update add schedule "
    "retrieve query call run execute test parse recognize identify determine measure evaluate assess rate "
    "review record stream play watch listen".split())
# Verbs that only qualify the previous need ("Please include the title and URL").
_QUALIFIERS = frozenset("include ensure use limit specify mention exclude format keep sort filter order".split())
# Name verbs that add nothing when the object is only a pronoun ("fetch that for me").
_GENERIC_VERBS = frozenset("get find search recommend help assist".split())

_ADVERBS = frozenset("also please kindly maybe possibly perhaps just then now quickly additionally further "
                     "simply really definitely".split())
_STOP = frozenset(
    "a an the this that these those my our your their his her its me us you him them it i we they he she one "
    "ones of for to in on at by with from about into onto over under between among across through during "
    "within without around near regarding concerning related relating associated like such as than and or but "
    "nor so too very more most less least much many just only even still again please kindly can could would "
    "will should shall may might must do does did done is are was were be been being am has have had having "
    "got there here then now currently today also well additionally etc eg ie including include includes "
    "along up out what which who how when where why whose whom if whether whatever any some all each every "
    "both either neither another other same own s per via lot lots bit".split())
_FILLERS = frozenset(
    "specific particular certain various different several few possible necessary relevant appropriate "
    "suitable good great nice best interesting unique fun useful detailed comprehensive complete full "
    "additional further given following respective corresponding available accurate reliable exact actual "
    "real proper right whole entire overall important helpful amazing awesome exciting cool lovely perfect "
    "ideal fresh next quick simple easy extensive wide broad trustworthy well known".split())
_AUX_STOP = frozenset("contains contain containing has have is are was were be".split())
# Objects made only of these have no content of their own.
_GENERIC = frozenset(
    "information info details detail data results result updates list options option help assistance support "
    "recommendations recommendation suggestions suggestion ideas idea answer answers response api apis tool "
    "tools task way ways thing things stuff preparations insights overview everything anything something "
    "necessary same call calls endpoint endpoints expertise guidance content material materials inspiration "
    "request requests question questions instructions more".split())
_LIST_HEADS = frozenset("list lists number set collection types type kinds kind sorts sort variety range "
                        "selection bunch couple array few plenty".split())
_INFO_HEADS = frozenset("information info details detail data insights specifics facts overview instructions".split())
_CUT = frozenset("that which who whom whose where when while so because if whether since though although "
                 "unless until before after once using based how why what i we you he she they".split())
_PREPOSITIONS = frozenset("of for in on about from with by at to regarding".split())
_GERUND_PREPS = frozenset("by for while after before without in".split())
_DETERMINERS = frozenset(
    "the a an my our your their his her its me us them this that these those some any all".split())
_PURPOSE_VERBS = frozenset(
    "stay avoid accommodate improve attract enhance impress celebrate inspire entertain engage ensure".split())
_ANAPHORA = frozenset("its their his her these those them it this that such".split())
_TITLES = frozenset("mr mrs ms dr st vs no jr sr".split())  # always followed by more of the sentence
_ABBREVIATIONS = frozenset("e.g i.e etc approx inc ltd u.s u.k co corp".split())  # may end one

# ---------------------------------------------------------------- regexes (all linear: no nested repeats)

_NON_ALNUM = re.compile(r"[^a-z0-9]")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_SENTENCE_END = re.compile(r"(?<![.!?])[.!?]++[\"')\]]*+\s+")
_COORD = re.compile(
    r";|:(?=\s)|,(?:\s*(?:and\s+then|and\s+also|and|then|also|plus|but\s+also|as\s+well\s+as)\b)?"
    r"|\b(?:and\s+then|and\s+also|and|as\s+well\s+as|plus|additionally)\b", re.I)
_QUOTED = re.compile(r"\"[^\"]{0,200}\"|(?<![^\W_])'[^']{0,120}'(?![^\W_])")
_URLISH = re.compile(r"(?<!\S)\S*(?:://|www\.|@)\S*")
_CONNECTIVES = re.compile(
    r"(?:(?:hi|hello|hey|greetings|ok|okay|and|also|then|additionally|furthermore|moreover|lastly|finally|"
    r"besides|plus|oh|so|but|next|secondly|thirdly|first(?:ly)?|in\s+addition|on\s+top\s+of\s+that|"
    r"as\s+well\s+as|after\s+that|afterwards|"
    r"after\s+this)\b[\s,]*)+", re.I)
_LEADING_JUNK = re.compile(r"^[^\w'\"(]+")
_INFINITIVE_END = re.compile(r"\bto\s+[a-z]+\s*$")  # "need to revise and correct it"
_ADDITIVE = re.compile(r"\b(?:also|additionally|as\s+well|in\s+addition|furthermore|moreover|lastly|finally|"
                       r"besides|another)\b", re.I)
_FOLLOWS_PLEASANTRY = re.compile(r"\b(?:if\s+you\s+(?:could|can)|can\s+you|could\s+you)\b", re.I)
_SPACES = re.compile(r"[^\S\n]+")
_PLEASANTRY = re.compile(
    r"(?:please\s+)?(?:thank|thanks|many\s+thanks|cheers|your\s+(?:help|support|assistance)|"
    r"(?:i|we)\s+(?:really\s+)?appreciate\b(?!\s+it\s+if)|(?:i|we)(?:'d|\s+would)\s+appreciate\s+(?:it|your)\b"
    r"(?!\s+if)|keep\s+(?:me|us)\s+(?:informed|posted|updated)|looking\s+forward|have\s+a\s+(?:nice|great)|"
    r"(?:i|we)\s+(?:hope|look\s+forward)|any\s+help\b)", re.I)

_SUBJ_BE = r"(?:i|we)(?:'m|'re|\s+am|\s+are)\s+(?:(?:also|really|particularly|especially|very|quite|just|" \
           r"currently|further|additionally|most|now|still)\s+)*"
_AFFIX = r"(?:\s+(?:also|please))*\s*"
_IT_WOULD_BE = (r"it(?:\s+would|'d|\s+will|\s+might)?\s+(?:also\s+)?be\s+(?:(?:really|very|extremely|super|"
                r"most|so|quite|also)\s+)*(?:great|helpful|nice|good|awesome|useful|wonderful|fantastic|amazing|"
                r"beneficial|appreciated|perfect|ideal|interesting|lovely|valuable|cool|excellent|convenient)\b")

# (pattern, verb to use when no verb follows the frame)
_HARD_FRAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.I), v) for p, v in (
    (r"(?:please\s+)?(?:can|could|would|will|can't|won't)\s+(?:you|u)\b(?:\s+(?:please|kindly|also|maybe|"
     r"possibly|perhaps|just|then|now|quickly|additionally))*\s*", "get"),
    (r"(?:i|we)(?:\s*'d|\s+would|\s+will)\s+(?:also\s+|really\s+)?(?:like|love|appreciate\s+it\s+if|"
     r"be\s+grateful\s+if)\s+(?:you|u)\b(?:\s+(?:to|could|can|would))?" + _AFFIX, "get"),
    (r"please\b[\s,]*(?:(?:also|kindly|just|then|do)\s+)*", "get"),
    (_IT_WOULD_BE + r"\s+(?:if\s+(?:you|u)\s+(?:could|can|would)|for\s+(?:me|us)\s+to|to)" + _AFFIX, "get"),
    (r"(?:let|lemme)\s+(?:me|us)\s+know\s+(?:about\s+|of\s+)?", "get"),
    (r"(?:don't|do\s+not)\s+forget\s+to\s+", "get"),
    (r"is\s+it\s+possible\s+(?:for\s+(?:you|me|us)\s+)?to\s+", "get"),
    (r"(?:is|are)\s+there\s+", "find"),
    (r"(?:do|can)\s+you\s+(?:have|know)\s+(?:of\s+|about\s+|any\s+)?", "find"),
    (r"(?:what|which|how|where|when|who|whose)\b(?:\s+(?:is|are|was|were|do|does|did|can|could|should|would|"
     r"will|many|much|kind|type|sort|of|the|i|we|you))*\s*", "get"),
))
_INTEREST = _SUBJ_BE + r"(?:interested|curious|keen|eager)\s+(?:in|about|on|to)\s+"
_SOFT_FRAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.I), v) for p, v in (
    (_IT_WOULD_BE + r"(?:\s+if)?" + _AFFIX, "get"),
    (_INTEREST, "get"),
    (_SUBJ_BE + r"(?:looking|searching|hunting)\s+(?:for\s+)?", "find"),
    (r"(?:" + _SUBJ_BE + r")?(?:in\s+need\s+of|trying\s+to|hoping\s+to|wondering\s+(?:if|whether|about|what|how)"
     r"|eager\s+to|keen\s+to)\s+", "get"),
    (r"(?:(?:i|we)\s+)?(?:(?:also|really|just|further|additionally|still|do|will|'ll)\s+)*(?:need|needs|want|"
     r"wants|require|requires|wish)\b(?:\s+(?:you|u)\s+to)?(?:\s+to)?" + _AFFIX, "get"),
    (r"(?:(?:i|we)\s*)?(?:would|'d)\s+(?:also\s+|really\s+)?(?:like|love)\b(?:\s+to)?" + _AFFIX, "get"),
))
_INTEREST_FRAME = next(p for p, _ in _SOFT_FRAMES if p.pattern == _INTEREST)
_VAGUE = re.compile(r"\b(?:(?:know|learn|hear|read|find\s+out)\s+more|what(?:'s|\s+is)\s+happening|"
                    r"stay\s+(?:updated|informed|up\s+to\s+date)|keep\s+up)\b", re.I)
_META_OBJECT = re.compile(
    r"(?:(?:a|an|the|any|some)\s+)?(?:[^\W_]+\s+){0,2}?(?:api|apis|tool|tools|service|services|endpoint|"
    r"endpoints|way|ways|method|function|resource)\s+(?:(?:available|out\s+there)\s+)?(?:that|which|to)\s+"
    r"(?:(?:can|could|will|would)\s+)?", re.I)


# ---------------------------------------------------------------- clause analysis

@dataclass(frozen=True)
class _Unit:
    """One analysed clause: what kind of statement it is and what it asks for."""

    text: str
    sentence: int
    kind: str  # "hard" | "soft" | "none" | "pleasantry"
    verb: str  # the name verb; "" for a statement without one
    words: tuple[str, ...]  # name words of the object, in order, capped
    own: tuple[str, ...]  # the non-generic ones
    key: tuple[str, ...]  # the object's key noun phrase, for anaphora
    stems: frozenset[str]  # of all content, for overlap tests
    core_stems: frozenset[str]  # of the object proper, for "is this restated later?"
    additive: bool  # marked as a new need: "also", "additionally", ...
    anaphoric: bool
    split_off: bool  # split from its sentence at a coordinator: a new need by construction
    goal: bool  # a wish that states a goal ("I want to buy a tracker"), not something a tool returns
    inherits: bool  # took its kind from an earlier clause of the sentence ("I want X and compare Y")


def _tokens(s: str, limit: int) -> list[tuple[str, int]]:
    """Lowercased words with their end offsets, at most `limit` of them."""
    return [(m.group().lower(), m.end()) for m in islice(_WORD.finditer(s), limit)]


def _ascii(word: str) -> str:
    """A lowercased token as a name word: ASCII letters and digits; "" for a contraction ("I'm")."""
    word = word.lower().removesuffix("'s")
    if "'" in word:
        return ""
    word = unicodedata.normalize("NFKD", word[:_MAX_WORD_CHARS]).encode("ascii", "ignore").decode()
    return _NON_ALNUM.sub("", word)


def _stem(word: str) -> str:
    for suffix in ("ations", "ation", "ings", "ing", "ers", "er", "ies", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _verb_phrase(s: str, strict: bool, imperative: bool = False) -> tuple[str, str] | None:
    """(name verb, object text) when `s` opens with a verb.

    strict rejects unknown verbs and noun readings ("list of"); imperative also rejects "-ing" forms.
    """
    toks = _tokens(s, 8)
    i = 0
    while i < len(toks) and toks[i][0] in _ADVERBS:
        i += 1
    if i >= len(toks):
        return None
    word, end = toks[i]
    nxt = toks[i + 1][0] if i + 1 < len(toks) else ""
    lemma = _VERB_FORMS.get(word)
    if lemma is None:
        if strict or word in _STOP or word in _FILLERS or not word.isalpha():
            return None
        lemma = word
    if imperative and word != lemma:
        return None
    if strict and word in _AMBIGUOUS and nxt not in _VERB_FOLLOWERS and not nxt.isdigit():
        return None
    j = i + 1
    if lemma in ("help", "assist"):
        if nxt in ("me", "us"):
            j += 1
        if j < len(toks) and toks[j][0] in ("to", "with", "in", "by", "out", "on"):
            j += 1
        rest = s[toks[j - 1][1]:]
        return _verb_phrase(rest, False) if _starts_with_verb(rest) else ("get", rest)
    if lemma == "look":
        phrasal = {"up": "lookup", "for": "find", "into": "get", "at": "get"}.get(nxt)
        if phrasal is None:
            return None
        lemma, end, j = phrasal, toks[i + 1][1], j + 1
    elif lemma == "let":
        if nxt not in ("me", "us") or i + 2 >= len(toks) or toks[i + 2][0] != "know":
            return None
        lemma, end, j = "get", toks[i + 2][1], j + 2
    elif lemma in ("find", "figure", "check", "pull") and nxt == "out":
        lemma, end, j = "get", toks[i + 1][1], j + 1
    if j < len(toks) and toks[j][0] in ("me", "us"):
        end, j = toks[j][1], j + 1
        if j < len(toks) and toks[j][0] == "with":
            end, j = toks[j][1], j + 1
    if lemma in ("know", "learn", "tell", "read", "hear", "inform", "get", "explore", "find"):
        while j < len(toks) and toks[j][0] in ("more", "about", "on", "regarding", "of"):
            end, j = toks[j][1], j + 1
    name_verb = _VERB_NAMES.get(lemma) or lemma
    return name_verb, s[end:]


def _starts_with_verb(s: str) -> bool:
    first = _tokens(s, 1)
    return bool(first) and first[0][0] in _VERB_FORMS


@dataclass(frozen=True)
class _Phrase:
    named: tuple[str, ...]  # name words, capped
    core: tuple[str, ...]  # every word before the first relative or purpose clause
    key: tuple[str, ...]  # key noun phrase, for anaphora
    anaphoric: bool  # opens with "its", "their", "these", "them", ...
    content: tuple[str, ...]  # every content token, for overlap tests


def _object_words(obj: str) -> _Phrase:
    """Name words, key noun phrase and content of an object phrase.

    Name words stop at the first relative or purpose clause once the object has a content word;
    content tokens (for overlap tests) run on to the end.
    """
    obj = _URLISH.sub(" ", _QUOTED.sub(" ", obj[:_OBJECT_CHARS]))
    raw = [m.group() for m in islice(_WORD.finditer(obj), 60)]
    toks = [t.lower() for t in raw]
    anaphoric = any(t in _ANAPHORA for t in toks[:2])
    words: list[str] = []
    info_head = ""
    head_len = 0
    cut = False
    content: list[str] = []
    for i, tok in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        tok = tok.removesuffix("'s")
        after = toks[i + 2] if i + 2 < len(toks) else ""
        if not cut and (tok in _CUT or (tok == "to" and _is_purpose(nxt, after))
                        or (tok in _GERUND_PREPS and _is_gerund(nxt))):
            cut = any(w not in _GENERIC for w in words)
            continue
        if tok in _PREPOSITIONS and words:
            head_len = head_len or len(words)
        word = _ascii(tok)
        acronym = len(raw[i]) > 1 and raw[i].isupper()  # "US", "IT": not the pronoun or the verb
        if not word or (not acronym and (word in _STOP or word in _FILLERS or word in _AUX_STOP)):
            continue
        if sum(c.isdigit() for c in word) >= 3 or word.isdigit():
            continue
        content.append(word)
        if cut or (not words and not info_head and word in _LIST_HEADS and nxt == "of"):
            continue
        if word in _INFO_HEADS:
            info_head = info_head or word
        elif word not in words and len(words) < 12:
            words.append(word)
    head = words[: head_len or len(words)]
    key = tuple(w for w in head if w not in _GENERIC)[-2:] or tuple(w for w in words if w not in _GENERIC)[:2]
    named = words[:MAX_NAME_WORDS]
    if info_head and len(named) < MAX_NAME_WORDS:
        named.append(info_head)
    return _Phrase(tuple(named), tuple(words), key, anaphoric, tuple(content))


def _is_purpose(word: str, after: str) -> bool:
    """Whether "to <word> <after>" opens a purpose clause ("to keep me updated"), not a destination."""
    return word in _VERB_FORMS or word in _PURPOSE_VERBS or (word not in _STOP and after in _DETERMINERS)


def _is_gerund(word: str) -> bool:
    return _VERB_FORMS.get(word, word) != word or (word.endswith("ing") and len(word) > 5)


def _analyse(piece: str, sentence: int, inherited: str, split_off: bool) -> _Unit:
    """Classify one clause and extract its verb and object."""
    stripped = _LEADING_JUNK.sub("", piece).rstrip()
    conn = _CONNECTIVES.match(stripped)
    body = _LEADING_JUNK.sub("", stripped[conn.end():]) if conn else stripped
    additive = bool(conn and _ADDITIVE.search(conn.group())) or bool(_ADDITIVE.search(body[:80]))
    text = body.strip(" ,;:.!?") or stripped
    kind, parsed, interest, inherits = "none", None, False, False
    if _PLEASANTRY.match(body) and not _FOLLOWS_PLEASANTRY.search(body[:200]):
        kind = "pleasantry"
    else:
        for frames, frame_kind in ((_HARD_FRAMES, "hard"), (_SOFT_FRAMES, "soft")):
            for pattern, default_verb in frames:
                m = pattern.match(body)
                if m and m.end() > 0:
                    rest = body[m.end():]
                    strict = frame_kind == "soft" and not m.group().rstrip().lower().endswith("to")
                    parsed = _verb_phrase(rest, strict) or (default_verb, rest)
                    kind = frame_kind
                    interest = pattern is _INTEREST_FRAME and sentence == 0
                    break
            if parsed:
                break
        if parsed is None:
            parsed = _verb_phrase(body, strict=True, imperative=True)
            if parsed:
                kind, inherits = ("soft", True) if inherited == "soft" else ("hard", False)
    if parsed is None:  # a statement: still find its verb for context keys and fallback names
        parsed = _statement(body)
    verb, obj = parsed
    meta = _META_OBJECT.match(obj.lstrip())
    if meta:
        inner = _verb_phrase(obj.lstrip()[meta.end():], strict=False)
        if inner:
            verb, obj = inner
    phrase = _object_words(obj)
    own = tuple(w for w in phrase.named if w not in _GENERIC)
    goal = kind == "soft" and (verb not in _RETRIEVAL or interest or bool(_VAGUE.search(body[:120])))
    return _Unit(text, sentence, kind, verb, phrase.named, own, phrase.key, _stems(phrase.content),
                 _stems(phrase.core), additive, phrase.anaphoric, split_off, goal, inherits)


def _stems(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(_stem(w) for w in words if w not in _GENERIC and len(w) > 1)


def _statement(body: str) -> tuple[str, str]:
    """Verb and object of a non-request clause ("I'm planning a trip to London")."""
    for m in islice(_WORD.finditer(body), 12):
        lemma = _VERB_FORMS.get(m.group().lower())
        if lemma and lemma not in ("have", "get", "let", "help", "look", "keep"):
            return _VERB_NAMES.get(lemma) or lemma, body[m.end():]
    return "", body


# ---------------------------------------------------------------- splitting

def _sentences(text: str) -> Iterator[str]:
    """Yield sentences: line breaks, then terminal punctuation not ending a known abbreviation."""
    for line in text.splitlines():
        start = 0
        for m in _SENTENCE_END.finditer(line):
            before = line[max(start, m.start() - 6):m.start()].split()
            word = before[-1].lower().lstrip("(") if before else ""
            if word in _TITLES or (word in _ABBREVIATIONS and not line[m.end():m.end() + 1].isupper()):
                continue
            yield line[start:m.end()].strip()
            start = m.end()
        if line[start:].strip():
            yield line[start:].strip()


def _is_request_start(rest: str) -> bool:
    conn = _CONNECTIVES.match(rest)
    body = rest[conn.end():] if conn else rest
    body = body.lstrip(" ,")
    if body[:1].isupper() and not body.startswith("I"):
        return any(p.match(body) for p, _ in _HARD_FRAMES[:-1])  # "CoinDesk and Decrypt": a name, not a verb
    if any(p.match(body) for p, _ in _HARD_FRAMES[:-1]) or any(p.match(body) for p, _ in _SOFT_FRAMES):
        return True
    return _verb_phrase(body, strict=True, imperative=True) is not None


def _clauses(sentence: str) -> Iterator[str]:
    """Split a sentence at coordinators followed by a new request."""
    start = 0
    for m in islice(_COORD.finditer(sentence), _MAX_COORDINATORS):
        hard_boundary = m.group() == ";"
        left = sentence[start:m.start()]
        if not hard_boundary:
            if not _is_request_start(sentence[m.end():m.end() + 160]):
                continue
            left_toks = _tokens(left[-200:], 60)
            if not left_toks or _ends_with_verb(left_toks) or _ends_with_infinitive(left):
                continue  # "how to write and submit a review": one verb phrase
            if len(left) <= 200 and not _object_words(_strip_frames(left)).named:
                continue  # "Can you, please, find ...": nothing on the left yet
        if left.strip(" ,;:"):
            yield left
        start = m.end()
    tail = sentence[start:]
    if tail.strip(" ,;:.!?"):
        yield tail


def _ends_with_verb(toks: list[tuple[str, int]]) -> bool:
    last = toks[-1][0]
    if last not in _VERB_FORMS:
        return False
    return last not in _AMBIGUOUS or (len(toks) > 1 and toks[-2][0] in ("to", "how", "can", "or", "please", "you"))


def _ends_with_infinitive(left: str) -> bool:
    return bool(_INFINITIVE_END.search(left[-60:]))


def _strip_frames(text: str) -> str:
    body = text.strip(" ,;:")
    for pattern, _ in _HARD_FRAMES[:-1] + _SOFT_FRAMES:
        m = pattern.match(body)
        if m:
            return body[m.end():]
    return body


def _units(text: str, limit: int) -> Iterator[_Unit]:
    count = 0
    for s_index, sentence in enumerate(_sentences(text)):
        inherited = "none"
        for p_index, piece in enumerate(_clauses(sentence)):
            unit = _analyse(piece, s_index, inherited, p_index > 0)
            inherited = unit.kind if unit.kind in ("hard", "soft") else inherited
            yield unit
            count += 1
            if count >= limit:
                return


# ---------------------------------------------------------------- assembly

@dataclass
class _Draft:
    """A sub-request being assembled: later clauses may still add detail to it."""

    texts: list[str]
    verb: str
    words: tuple[str, ...]
    key: tuple[str, ...]
    stems: set[str]
    sentence: int

    def attach(self, text: str, stems: frozenset[str] = frozenset()) -> None:
        if text.casefold() not in (t.casefold() for t in self.texts):
            self.texts.append(text)
        self.stems |= stems


def _motivation(units: list[_Unit]) -> set[int]:
    """Indices of wishes that motivate rather than ask.

    A goal ("I want to buy a fitness tracker") when a direct request exists anywhere; or, before the
    first direct request, a wish whose object a later request mostly restates.
    """
    first_hard = next((i for i, u in enumerate(units) if u.kind == "hard"), len(units))
    any_hard = first_hard < len(units)
    later: dict[str, int] = {}
    for u in units:
        if u.kind in ("hard", "soft"):
            for s in u.stems:
                later[s] = later.get(s, 0) + 1
    result: set[int] = set()
    for i, u in enumerate(units):
        if u.kind in ("hard", "soft"):
            for s in u.stems:
                later[s] -= 1
        if u.kind != "soft" or u.additive:
            continue
        if u.inherits and i - 1 in result:
            result.add(i)  # "I need to analyze my password and generate a report": all motivation
            continue
        restated = sum(later.get(s, 0) > 0 for s in u.core_stems)
        if (u.goal and any_hard) or (i < first_hard and restated and 2 * restated >= len(u.core_stems)):
            result.add(i)
    return result


def _elaborates(u: _Unit, last: _Draft) -> bool:
    """A clause restating the previous need, not marked as a new one, adds detail to it."""
    if u.additive or u.split_off:
        return False
    if u.kind == "soft":
        return bool(u.stems & last.stems)
    if u.words and u.words[0] in _GENERIC:
        return True  # "Provide the results in XML format"
    key_stems = {_stem(w) for w in u.key}
    return bool(key_stems) and key_stems <= last.stems


def _name(verb: str, words: tuple[str, ...], fallback_text: str) -> str:
    verb = _ascii(verb)
    parts = [w for w in dict.fromkeys(words) if w != verb][:MAX_NAME_WORDS]
    if verb and parts:
        return "_".join([verb, *parts])
    content = list(dict.fromkeys(w for w in (_ascii(t) for t, _ in _tokens(fallback_text, 40))
                                 if w and w not in _STOP and w not in _FILLERS and not w[0].isdigit()))
    content = content[:MAX_NAME_WORDS]
    if content:
        return "_".join([verb or "search", *content])
    return "handle_request"


def _assemble(units: list[_Unit], max_parts: int) -> list[_Draft]:
    motivation = _motivation(units)
    drafts: list[_Draft] = []
    context_key: tuple[str, ...] = ()
    for i, u in enumerate(units):
        last = drafts[-1] if drafts else None
        if u.kind == "pleasantry":
            continue
        if u.kind == "none" or i in motivation:
            if last and u.kind == "none" and u.sentence - last.sentence <= 1 and u.own:
                last.attach(u.text)  # a detail of the previous need ("The VAT number is ...")
            context_key = u.key or context_key
            continue
        antecedent = last.key if last else context_key
        if last and ((u.verb in _QUALIFIERS and not u.additive) or _elaborates(u, last)):
            last.attach(u.text, u.stems)
            continue
        words, key, text = u.words, u.key, u.text
        if not u.own and not last and u.kind == "soft" and u.verb in _GENERIC_VERBS:
            context_key = antecedent
            continue  # "I need your expertise": a wish with nothing in it
        if not u.own:
            if last and (u.verb in _GENERIC_VERBS or u.verb in _QUALIFIERS or not antecedent):
                last.attach(u.text)
                continue
            words, key = antecedent + u.words, antecedent
            text = f"{u.text} ({' '.join(antecedent)})" if antecedent else u.text
        elif u.anaphoric and len(u.own) < 2 and antecedent:
            words = antecedent[:2] + u.words
            text = f"{u.text} ({' '.join(antecedent)})"
        if len(drafts) >= max_parts:
            break
        verb = "get" if u.verb in _QUALIFIERS else u.verb  # "Additionally, include the scores"
        drafts.append(_Draft([text], verb, words, key or antecedent, set(u.stems), u.sentence))
    return drafts


def _clean(query: str) -> str:
    text = unicodedata.normalize("NFKC", query)
    text = text.translate(str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}))
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def split_subrequests(query: str, max_parts: int = 8) -> list[SubRequest]:
    """Split a request into named functional sub-requests; always at least one for a non-empty query."""
    if not query or not query.strip():
        raise ValueError("query is empty")
    if max_parts < 1:
        raise ValueError("max_parts must be at least 1")
    text = _clean(query)
    units = list(_units(text, max_parts * _MAX_UNITS_PER_PART))
    drafts = _assemble(units, max_parts)
    if not drafts:  # no request clause: the whole query is the one need
        whole = " ".join(text.split())
        named = next((u for u in units if u.verb and u.words), None)
        return [SubRequest(whole, _name(named.verb, named.words, whole) if named else _name("", (), whole))]
    result: list[SubRequest] = []
    seen_texts: set[str] = set()
    taken: set[str] = set()
    for d in drafts:
        body = "; ".join(d.texts)
        if body.casefold() in seen_texts:
            continue
        seen_texts.add(body.casefold())
        base = _name(d.verb, d.words, body)
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        result.append(SubRequest(body, name))
    return result
