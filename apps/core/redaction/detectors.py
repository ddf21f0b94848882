"""The built-in detectors: each finds the spans of one kind of personal or secret data in a string.

A detector is a trigger plus a finder. The trigger is a cheap test that every string holding
something the detector can find passes (an '@' for e-mail, a run of seven digits for phone numbers,
cards and IBANs, a provider's literal prefix for secrets); the Redactor runs the active detectors'
triggers once per string — or once per JSON value, over its serialized text (redactor.py). Only a
string that passes reaches the finders, which may validate in Python (Luhn, mod-97, `ipaddress`,
`phonenumbers`). Ingestion sends mostly names, statuses, small numbers and prose, so most strings
stop at the triggers.

Each trigger is a substring test or a regex that starts with a literal character, which `re` finds
with a fast scan: a pattern that starts with a class (`\\d…`) is tried at every position and cost
4–6 µs on a 170-character tool result, ten times the rest of the triggers together.

Every finder returns (start, end) spans in the string it was given; the Redactor merges the spans of
all detectors (redactor.py) and replaces them with the detector's placeholder.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import phonenumbers

Span = tuple[int, int]


@dataclass(frozen=True)
class Detector:
    name: str
    placeholder: str
    # Higher wins a tie between two overlapping spans of the same length (redactor.py): a checksum or
    # a provider's literal prefix is stronger evidence than a shape that phone numbers also have.
    specificity: int
    # A cheap test that every string with a span for this detector passes; None: run the finder always.
    trigger: Callable[[str], bool] | None
    find: Callable[..., Iterator[Span]]
    # A detector that yields runs after the others and its find() also takes the spans they found,
    # which it may skip: they would win the overlap anyway (only the slow phone finder does).
    yields: bool = False


# --- e-mail -----------------------------------------------------------------------------------------

# RFC 5322's dot-atom local part without quoted strings (nobody types those), a dotted host name and a
# TLD of letters. The lookbehind keeps a longer run of local-part characters from being cut in half.
# RFC 5322's dot-atom local part without quoted strings (nobody types those), a dotted host name and a
# TLD of letters; \w rather than ASCII so internationalised addresses (RFC 6531, "josé@exämple.de")
# are found too. The lookbehind keeps a longer run of local-part characters from being cut in half.
_EMAIL = re.compile(
    r"(?<![\w.%+\-])\w(?:[\w.%+\-]{0,62}[\w%+\-])?"
    r"@(?:\w(?:[\w\-]{0,61}\w)?\.)+([^\W\d_]{2,24})(?![\w\-]|\.\w)"
)
# "icon@2x.png" is how retina assets are named, not an address: no TLD is one of these extensions.
_FILE_EXTENSIONS = frozenset(
    {"png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "css", "js", "ts", "py", "json", "pdf"}
)


def _find_emails(text: str) -> Iterator[Span]:
    for match in _EMAIL.finditer(text):
        if match.group(1).lower() not in _FILE_EXTENSIONS:
            yield match.span()


# --- payment cards ----------------------------------------------------------------------------------

# Groups of digits separated by one space, dash or dot: "4111 1111 1111 1111", "3782-822463-10005",
# "4111.1111.1111.1111", "4111111111111111". Bounded by non-digits so a card is never cut out of a
# longer number.
_DIGIT_GROUPS = re.compile(r"(?<![\d.,])\d+(?:[ \-.]\d+)*(?![\d]|[.,]\d)")
_GROUP = re.compile(r"\d+")


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _card_number(digits: str) -> bool:
    # Every card network's IIN starts with 2–6 (Mastercard 2-series, Amex/Diners/JCB 3, Visa 4,
    # Mastercard/Maestro 5, Discover/UnionPay/Maestro 6). It drops Luhn-valid millisecond timestamps
    # (1…) and most order numbers that Luhn alone lets through one time in ten.
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)


# A number labelled as something else is not a card even when it passes Luhn: IMEIs are Luhn-checked
# 15-digit numbers, and one order number in ten passes by chance.
_NOT_A_CARD_LABEL = re.compile(
    r"\b(?:imei|serial|order|invoice|tracking|sku|isbn)\s*(?:no\.?|number|num|nr\.?)?\s*[:#]?\s*$", re.IGNORECASE
)
# The digits of an IBAN-shaped string whose checksum failed ("CH06 6473 2939 5127 4741 0") are an
# invalid IBAN — a typo — not a card or phone number that happens to follow a country code.
_AFTER_IBAN_PREFIX = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2} (?:[A-Za-z0-9]{4} )*$")


def _labelled_otherwise(label: re.Pattern[str], text: str, start: int) -> bool:
    window_start = max(0, start - 40)
    return (
        label.search(text, window_start, start) is not None
        or _AFTER_IBAN_PREFIX.search(text, window_start, start) is not None
    )


def _find_cards(text: str) -> Iterator[Span]:
    for start, end in _card_spans(text):
        if not _labelled_otherwise(_NOT_A_CARD_LABEL, text, start):
            yield (start, end)


def _card_spans(text: str) -> Iterator[Span]:
    for run in _DIGIT_GROUPS.finditer(text):
        groups = [(m.start() + run.start(), m.end() + run.start()) for m in _GROUP.finditer(run.group())]
        if len(groups) == 1:
            # One unbroken number: a card only if it is the whole number, never a slice of it.
            if _card_number(run.group()):
                yield run.span()
            continue
        # Separated groups: the longest run of consecutive groups that is a valid card, so "card
        # 4111 1111 1111 1111 exp 12 2027" does not swallow the expiry and "ref 12 4111 …" still finds it.
        i = 0
        while i < len(groups):
            best = None
            digits = ""
            for j in range(i, len(groups)):
                digits += text[groups[j][0] : groups[j][1]]
                if len(digits) > 19:
                    break
                if _card_number(digits):
                    best = j
            if best is None:
                i += 1
            else:
                yield (groups[i][0], groups[best][1])
                i = best + 1


# --- IBAN -------------------------------------------------------------------------------------------

# The registry's length per country (SWIFT IBAN registry); a country code not listed is not an IBAN.
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
    "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
    "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip
# Country code, two check digits, then the account part, written solid or in groups of four.
_IBAN = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2})(\d{2})((?: ?[A-Za-z0-9]){10,30})", re.ASCII)


def iban_valid(compact: str) -> bool:
    """ISO 13616: move the first four characters to the end, letters to 10–35; the number mod 97 is 1."""
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _find_ibans(text: str) -> Iterator[Span]:
    for match in _IBAN.finditer(text):
        country = match.group(1).upper()
        length = IBAN_LENGTHS.get(country)
        if length is None:
            continue
        # The pattern may run on into a following word ("… 0130 00 AND"); take exactly the country's
        # length of characters and require that the IBAN ends there.
        start = match.start()
        end = match.start(3)
        count = 4
        body = match.group(3)
        position = 0
        while count < length and position < len(body):
            if body[position] != " ":
                count += 1
            position += 1
        end += position
        if count != length or (end < len(text) and text[end].isalnum()):
            continue
        compact = text[start:end].replace(" ", "").upper()
        if iban_valid(compact):
            yield (start, end)


# --- IP addresses -----------------------------------------------------------------------------------

# Four dotted numbers that are not part of a longer dotted run: "1.2.3.4.5" (an OID or a build
# number) and "v1.2.3.4" are not addresses; "1.2.3" (a version) never has four parts.
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
# Hex groups around colons; ipaddress decides. The lookarounds keep "std::vector" and times out.
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{1,4}:|:)(?::|[0-9A-Fa-f]{1,4}:){1,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])"
)


def _find_ips(text: str) -> Iterator[Span]:
    for match in _IPV4.finditer(text):
        try:
            ipaddress.IPv4Address(match.group())
        except ValueError:
            continue
        yield match.span()
    if ":" not in text:
        return
    for match in _IPV6.finditer(text):
        candidate = match.group()
        # "::" and "::1" are the unspecified and loopback addresses, and a bare "a::b" is far more often
        # code (Ruby/C++ scopes) than an address: an address names at least three parts, one a digit.
        if candidate.count(":") < 2 or len(candidate) < 6 or not any(c.isdigit() for c in candidate):
            continue
        try:
            ipaddress.IPv6Address(candidate)
        except ValueError:
            continue
        yield match.span()


# --- phone numbers ----------------------------------------------------------------------------------

# 7 to 15 digits (E.164's range) with the separators people write between them. It only decides
# where phonenumbers runs: its matcher costs about 1 ms per kilobyte, so it reads a window around
# each candidate, never a whole tool result.
_PHONE_CANDIDATE = re.compile(r"\+?\(?\d(?:[ ().\-/]{0,3}\d){6,}")
_PHONE_WINDOW_MARGIN = 24
# Numbers labelled as something else ("order #4155552671", "invoice 2025550143") are valid-looking
# numbers that are not phone numbers. phonenumbers cannot know; the label just before them can.
_NOT_A_PHONE_LABEL = re.compile(
    r"(?:#|\b(?:order|invoice|ticket|ref|reference|id|sku|tracking|build|issue|pr|po|case|account|acct)"
    r"\s*(?:no\.?|number|num|nr\.?)?\s*[:#]?)\s*$",
    re.IGNORECASE,
)


_SINGLE_DIGIT_GROUPS = re.compile(r"(?:\d\s){4}")


def _counting(raw: str) -> bool:
    """ "1 2 3 4 5 6 7 8 9 10 items" is a list of small numbers; no numbering plan writes four one-digit
    groups in a row without a country code."""
    return not raw.startswith("+") and _SINGLE_DIGIT_GROUPS.search(raw) is not None


def phone_finder(regions: tuple[str, ...]) -> Callable[..., Iterator[Span]]:
    """Finds phone numbers valid in one of `regions` (national format) or anywhere (with +country code).

    Leniency.VALID: the number must be a valid number of its region by phonenumbers' metadata, so
    epoch seconds, "(555) 123-4567" and most order numbers do not match, while every real number does
    (POSSIBLE matched timestamps and prices in the corpus; STRICT_GROUPING rejected nothing more).

    phonenumbers is the slowest finder (about 0.2 ms per window and region), so it skips a candidate
    that lies inside a span another detector already found (`claimed`: a card's or an IBAN's digits,
    which win the overlap anyway, redactor.py), and reads a window whose candidates all start with
    "+" in one region only: an international number parses the same in every region.
    """

    def find(text: str, claimed: list[Span] | tuple[Span, ...] = ()) -> Iterator[Span]:
        windows: list[list] = []
        for match in _PHONE_CANDIDATE.finditer(text):
            if any(s <= match.start() and match.end() <= e for s, e in claimed):
                continue
            start = max(0, match.start() - _PHONE_WINDOW_MARGIN)
            end = min(len(text), match.end() + _PHONE_WINDOW_MARGIN)
            international = match.group().startswith("+")
            if windows and start <= windows[-1][1]:
                windows[-1][1] = end
                windows[-1][2] = windows[-1][2] and international
            else:
                windows.append([start, end, international])
        found: set[Span] = set()
        for start, end, international in windows:
            window = text[start:end]
            for region in regions[:1] if international else regions:
                for number in phonenumbers.PhoneNumberMatcher(window, region, leniency=phonenumbers.Leniency.VALID):
                    span = (start + number.start, start + number.end)
                    if _labelled_otherwise(_NOT_A_PHONE_LABEL, text, span[0]) or _counting(number.raw_string):
                        continue
                    found.add(span)
        yield from sorted(found)

    return find


# --- secrets ----------------------------------------------------------------------------------------

# (needle, pattern, group): the pattern runs only when the literal needle is in the string (a C
# substring search), so a dozen providers cost a dozen memchr-speed scans, not a dozen regex scans.
# `group` is the part replaced: for a bearer header only the token, so "Authorization: Bearer
# <SECRET>" still says what the header was.
_SECRET_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str], int], ...] = (
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-api03-…).
    (("sk-",), re.compile(r"(?<![\w\-])sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), 0),
    # AWS access key ids (long-term AKIA, temporary ASIA).
    (("AKIA", "ASIA"), re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"), 0),
    # GitHub personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained PATs.
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"(?<![\w])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        0,
    ),
    # Slack bot, user, app-level and legacy tokens.
    (("xox",), re.compile(r"(?<![\w])xox[baprs]-[A-Za-z0-9\-]{10,}"), 0),
    # Google API keys.
    (("AIza",), re.compile(r"(?<![\w])AIza[0-9A-Za-z_\-]{35}(?![\w\-])"), 0),
    # Stripe secret and restricted keys, live and test.
    (("_live_", "_test_"), re.compile(r"(?<![\w])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"), 0),
    # JWTs: a base64url JSON header ("eyJ" is '{"'), a payload, and a signature (empty for alg none).
    (("eyJ",), re.compile(r"(?<![\w\-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*"), 0),
    # An Authorization header's bearer token of any provider (RFC 6750's b64token characters).
    (("earer", "EARER"), re.compile(r"\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)", re.IGNORECASE), 1),
    # PEM private keys (RSA, EC, OpenSSH, PKCS#8, encrypted); a block cut off by a log's size limit is
    # redacted to the end of the string rather than left half-visible.
    (
        ("PRIVATE KEY",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)", re.S
        ),
        0,
    ),
)


def _find_secrets(text: str) -> Iterator[Span]:
    for needles, pattern, group in _SECRET_PATTERNS:
        if any(needle in text for needle in needles):
            for match in pattern.finditer(text):
                yield match.span(group)


# --- triggers ---------------------------------------------------------------------------------------

_DIGIT_RUN_7 = re.compile(r"\d(?:[ ().\-/]{0,3}\d){6}")
# ASCII text is mapped byte for byte (digits to 0, the separators phone numbers and cards use to '.',
# anything else to 'x') so the seven-digit run is a pattern that starts with a literal.
_SHAPES = bytes(
    ord("0") if chr(i).isdigit() and i < 128 else ord(".") if chr(i) in " ().-/" else ord("x") for i in range(256)
)
_SHAPED_RUN_7 = re.compile(rb"0(?:\.{0,3}0){6}")
_IPV4_MIDDLE = re.compile(r"\.\d{1,3}\.\d{1,3}\.")
_IPV6_COLONS = re.compile(r":[0-9A-Fa-f]{0,4}:")
# The providers' needles with the five GitHub prefixes as one "gh" (twelve scans instead of sixteen):
# a string with "gh" in a word only goes on to the finders, which check the full prefixes.
_SECRET_NEEDLES = tuple(
    dict.fromkeys(
        "gh" if needle.startswith("gh") else needle
        for needles, _pattern, _group in _SECRET_PATTERNS
        for needle in needles
    )
)


def _has_email_sign(text: str) -> bool:
    return "@" in text


def _has_digit_run(text: str) -> bool:
    """Seven digits with at most three separators between each: every phone number, card and IBAN."""
    if text.isascii():
        return _SHAPED_RUN_7.search(text.encode("ascii").translate(_SHAPES)) is not None
    return _DIGIT_RUN_7.search(text) is not None


def _has_ip_shape(text: str) -> bool:
    # An IPv4 address has ".n.n." in its middle; every IPv6 form has two colons at most four hex apart.
    return _IPV4_MIDDLE.search(text) is not None or (":" in text and _IPV6_COLONS.search(text) is not None)


def _has_secret_needle(text: str) -> bool:
    return any(needle in text for needle in _SECRET_NEEDLES)


DEFAULT_PHONE_REGIONS = ("US", "GB")


def builtin_detectors(phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS) -> dict[str, Detector]:
    return {
        "email": Detector("email", "<EMAIL>", 40, _has_email_sign, _find_emails),
        "phone": Detector("phone", "<PHONE>", 10, _has_digit_run, phone_finder(phone_regions), yields=True),
        "credit_card": Detector("credit_card", "<CREDIT_CARD>", 50, _has_digit_run, _find_cards),
        "iban": Detector("iban", "<IBAN>", 60, _has_digit_run, _find_ibans),
        "ip_address": Detector("ip_address", "<IP_ADDRESS>", 30, _has_ip_shape, _find_ips),
        "secret": Detector("secret", "<SECRET>", 70, _has_secret_needle, _find_secrets),
    }


DETECTOR_NAMES = ("email", "phone", "credit_card", "iban", "ip_address", "secret")
