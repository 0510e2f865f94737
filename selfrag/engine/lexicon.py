"""The words the engine's rules share: a month and a year as dates write them (`decide`, `values`), and the peoples'
adjectives with their countries' names (`decide`, `questions`).

    MONTH      a month's name, whole or cut short ("Sep", "Sept.", "September")
    YEAR       a year from 1000 to 2099, not the start of a longer number
    COUNTRIES  a people's adjective -> its country's names ("German" -> "Germany")
    COUNTRY    any country's name, its group (`c0`, `c1`, ...) the people's place in `PEOPLE`
    PEOPLE     the peoples' adjectives ("American", "South African")
"""

from __future__ import annotations

import re

MONTH = (  # a month's name, whole or cut short
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
YEAR = r"(?:1[0-9]{3}|20[0-9]{2})(?![\d,.]\d)"  # a year, not the start of a longer number
COUNTRIES = {  # a people's adjective -> its country's names, so "from Germany" finds "German film director"
    "American": r"United States(?: of America)?|U\.S\.(?:A\.)?|USA|US|America",
    "British": r"United Kingdom|U\.K\.|UK|Great Britain|Britain",
    "English": "England", "Scottish": "Scotland", "Irish": "Ireland", "Welsh": "Wales", "French": "France",
    "German": "Germany", "Italian": "Italy", "Spanish": "Spain", "Portuguese": "Portugal", "Dutch": "Netherlands",
    "Belgian": "Belgium", "Swiss": "Switzerland", "Austrian": "Austria", "Swedish": "Sweden", "Norwegian": "Norway",
    "Danish": "Denmark", "Finnish": "Finland", "Polish": "Poland", "Czech": "Czech Republic|Czechia",
    "Hungarian": "Hungary", "Greek": "Greece", "Turkish": "Turkey", "Russian": "Russia", "Ukrainian": "Ukraine",
    "Canadian": "Canada", "Mexican": "Mexico", "Brazilian": "Brazil", "Argentine": "Argentina",
    "Chilean": "Chile", "Australian": "Australia", "Indian": "India", "Chinese": "China", "Japanese": "Japan",
    "Korean": "South Korea|North Korea|Korea", "Filipino": "Philippines", "Egyptian": "Egypt", "Iranian": "Iran",
    "Israeli": "Israel", "Nigerian": "Nigeria", "South African": "South Africa", "New Zealander": "New Zealand",
}  # fmt: skip
COUNTRY = re.compile(
    r"\b(?:" + "|".join(f"(?P<c{n}>{names})" for n, names in enumerate(COUNTRIES.values())) + r")(?!\w)"
)
PEOPLE = tuple(COUNTRIES)  # the peoples' adjectives ("American", "South African")
