"""A choice question is decided by the documents where they can: by the two options' dates for a choice about
time, by a trait found in one option's own sentences only for a choice about a trait."""

from __future__ import annotations

import pytest

from selfrag.engine.decide import (
    Proposal,
    asked_order,
    asked_trait,
    date_after,
    decide,
    decide_stated,
    decide_yes_no,
    read_from,
)
from selfrag.engine.evidence import terms

PEOPLE = ("Pablo Trapero", "Aleksander Ford")
TEXTS = [
    "Pablo Trapero (born 4 October 1971) is an Argentine film producer, editor and director.Aleksander Ford "
    "(24 November 190830 April 1980) was a Polish film director and head of the Polish People's Army Film Crew.",
]


@pytest.mark.parametrize(
    ("question", "offered", "order"),
    [
        ("Who was born first, Pablo Trapero or Aleksander Ford?", PEOPLE, "earlier"),
        ("Who is younger, Pablo Trapero or Aleksander Ford?", PEOPLE, "later"),
        ("Which film was released earlier, Roving Mars or The London Connection?",
         ("Roving Mars", "The London Connection"), "earlier"),
        ("Which magazine was started first, Arthur's Magazine or First for Women?",
         ("Arthur's Magazine", "First for Women"), "earlier"),
        # the options' own words are not the question's: "Last" names a band, "first" asks
        ("Which band formed first, The Last Shadow Puppets or Oasis?", ("The Last Shadow Puppets", "Oasis"), "earlier"),
        ("Who was the first astronaut to command a mission, Patrick Baudry or Frank De Winne?",
         ("Patrick Baudry", "Frank De Winne"), None),  # first to do something: not a question of dates
        ("Who first acted in the show, Luke Pasqualino or Lacey Turner?", ("Luke Pasqualino", "Lacey Turner"), None),
        ("Between Brian Kidd and Mikel Arteta, what year was the older one born?",
         ("Brian Kidd", "Mikel Arteta"), None),  # asks for a year
        ("Which author was more popular, Richard Wright or Richard Bach?", ("Richard Wright", "Richard Bach"), None),
        ("Which was released in 2011 and earlier reissued, Box or Faces?", ("Box", "Faces"), None),  # dated itself
    ],
)  # fmt: skip
def test_the_question_says_which_end_of_time_it_asks_for(question, offered, order):
    assert asked_order(question, offered) == order


def test_an_options_date_is_the_first_after_it_even_where_a_range_lost_its_dash():
    assert date_after("Pablo Trapero", TEXTS) == (1971, 10, 4)
    assert date_after("Aleksander Ford", TEXTS) == (1908, 11, 24)  # not "190830 April": the dash was lost
    assert date_after("Aleksander Ford", TEXTS, death=True) == (1980, 4, 30)  # a range's end, for deaths
    assert date_after("Pablo Trapero", TEXTS, death=True) is None  # born, and no death date


def test_the_sentence_an_option_opens_is_read_before_one_that_mentions_it():
    texts = [
        "She toured in 2007 with Anette Olzon.",
        "Anette Ingegerd Olsson (born 21 June 1971), known as Anette Olzon, is a Swedish singer.",
    ]
    assert date_after("Anette Olzon", texts) == (1971, 6, 21)


def test_an_options_article_does_not_make_every_sentence_its_own():
    texts = ["The tour of 2004 was shared with The Exies.", "The Exies are an American band formed in 1997."]
    assert date_after("The Exies", texts) == (1997, 0, 0)


def test_a_date_may_come_in_the_next_sentence_but_not_from_the_other_options():
    texts = ["First for Women is a magazine published in the USA. The magazine was started in 1989."]
    assert date_after("First for Women", texts) == (1989, 0, 0)
    texts = ["Oasis is an English band. The Last Shadow Puppets formed in 2007."]
    assert date_after("Oasis", texts, "The Last Shadow Puppets") is None


def test_words_scattered_over_a_sentence_do_not_name_an_option():
    texts = ["The moon landing was watched by Buzz Aldrin (born January 20, 1930) on a walk."]
    assert date_after("Walk the Moon", texts) is None


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Who was born first, Pablo Trapero or Aleksander Ford?", "Aleksander Ford"),
        ("Who is younger, Pablo Trapero or Aleksander Ford?", "Pablo Trapero"),
        ("Who is older, Aleksander Ford or Pablo Trapero?", "Aleksander Ford"),
        ("Who died first, Pablo Trapero or Aleksander Ford?", None),  # one date of death only
        ("Which author was more popular, Pablo Trapero or Aleksander Ford?", None),
    ],
)
def test_the_dates_pick_the_option_the_question_asks_for(question, answer):
    offered = PEOPLE if question.index("Pablo") < question.index("Aleksander") else PEOPLE[::-1]
    assert decide(question, offered, TEXTS) == (Proposal(answer, "dates") if answer else None)


def test_a_tie_or_a_missing_date_decides_nothing():
    same_year = ["Summit was created in 1990.", "Crosstrack was created in March 1990."]
    assert decide("Was Summit or Crosstrack created first?", ("Summit", "Crosstrack"), same_year) is None
    months = ["Summit was created in May 1990.", "Crosstrack was created in March 1990."]
    assert decide("Was Summit or Crosstrack created first?", ("Summit", "Crosstrack"), months) == Proposal(
        "Crosstrack", "dates"
    )
    one = ["Summit was created in 1990.", "Crosstrack is a ski resort."]
    assert decide("Was Summit or Crosstrack created first?", ("Summit", "Crosstrack"), one) is None


@pytest.mark.parametrize(
    ("question", "offered", "trait"),
    [
        ("Which film director is from Germany, Peter Schamoni or Norman Z. McLeod?",
         ("Peter Schamoni", "Norman Z. McLeod"), "film director German"),  # the country as its people's adjective
        ("Which band is from the US, Pylon or Rivermaya?", ("Pylon", "Rivermaya"), "band American"),
        ("Which court case, Gonzales v. Carhart or Lawrence v. Texas, struck down the sodomy law?",
         ("Carhart", "Lawrence v. Texas"), "court case struck down sodomy law"),
        # an option cut short by the parser ("Iraq in Fragments") leaves none of its words in the trait
        ("Which documentary is French, Iraq in Fragments or Beyond Hatred?", ("Fragments", "Beyond Hatred"),
         "documentary French"),
        ("Which genus has more species, Oemleria or Lygodium?", ("Oemleria", "Lygodium"), None),  # a comparison
        ("Which rock band was formed before 1990, Pearl Jam or The House of Love?",
         ("Pearl Jam", "The House of Love"), None),  # an order in time
        ("Who was born first, Pablo Trapero or Aleksander Ford?", PEOPLE, None),  # the dates' question
        ("Which was released second, Charley and the Angel or Planes?", ("Charley", "Planes"), None),
        ("Which genus has more species Ramonda or Gaylussacia?", ("Ramonda", "Gaylussacia"), None),
        ("Which composer was Hungarian Béla Bartók or Johann Pepusch?", ("Béla Bartók", "Johann Pepusch"), None),
    ],
)  # fmt: skip
def test_a_choice_about_a_trait_says_which_words_it_asks_for(question, offered, trait):
    assert asked_trait(question, offered) == (terms(trait) if trait else None)


BANDS = [  # HaluEval's way: two paragraphs in one text, the space after a full stop lost
    "Pylon was an American rock band formed in Athens, Georgia, in 1979. The band was influential.Rivermaya is a "
    "Filipino rock band formed in 1994. It has released nine albums.",
    "Bruce Dickinson is an English singer and airline pilot, lead singer of Iron Maiden. He also writes novels. "
    "Billy Gibbons is an American musician, guitarist of ZZ Top.",
]


@pytest.mark.parametrize(
    ("question", "offered", "answer"),
    [
        ("Which band is from the US, Pylon or Rivermaya?", ("Pylon", "Rivermaya"), "Pylon"),
        ("Which band is from the Philippines, Pylon or Rivermaya?", ("Pylon", "Rivermaya"), "Rivermaya"),  # Filipino
        ("Which band is from Peru, Pylon or Rivermaya?", ("Pylon", "Rivermaya"), None),  # said of neither
        ("Who was also an airline pilot, Billy Gibbons or Bruce Dickinson?", ("Billy Gibbons", "Bruce Dickinson"),
         "Bruce Dickinson"),
        ("Which band is Filipino or from Georgia, Pylon or Rivermaya?", ("Pylon", "Rivermaya"), None),  # 1 to 1
        ("Which band released nine albums in Georgia, Pylon or Rivermaya?", ("Pylon", "Rivermaya"), "Rivermaya"),
        ("Which singer is English, Billy Gibbons or Bruce Dickinson?", ("Billy Gibbons", "Bruce Dickinson"),
         "Bruce Dickinson"),
        # Gibbons's sentences stop before Dickinson's: "English" is not said of him, nor "musician" of Dickinson
        ("Which musician is English, Billy Gibbons or Bruce Dickinson?", ("Billy Gibbons", "Bruce Dickinson"), None),
    ],
)  # fmt: skip
def test_a_trait_said_of_one_option_only_or_far_more_picks_it(question, offered, answer):
    assert decide(question, offered, BANDS) == (Proposal(answer, "traits") if answer else None)


# -- a yes/no question about two names -------------------------------------------------------------------------

FILMS = [
    "Pylon was an American rock band formed in Athens, Georgia, in 1979. The band was influential.Rivermaya is a "
    "Filipino rock band formed in 1994. It has released nine albums.",
    "The Castaway Cowboy is a 1974 American film starring James Garner. The Straight Story is a 1999 biographical "
    "drama film directed by David Lynch.",
    "Bruce Dickinson is an English singer and airline pilot. Roger Daltrey is an English singer and actor.",
]


@pytest.mark.parametrize(
    ("question", "named", "decision"),
    [
        ("Are Pylon and Rivermaya from the same country?", ("Pylon", "Rivermaya"), Proposal("No", "same")),
        ("Are Bruce Dickinson and Roger Daltrey of the same nationality?", ("Bruce Dickinson", "Roger Daltrey"),
         Proposal("Yes", "same")),
        ("Are Pylon and Rivermaya of different nationalities?", ("Pylon", "Rivermaya"), Proposal("Yes", "same")),
        ("Did The Castaway Cowboy and The Straight Story come out in the same year?",
         ("The Castaway Cowboy", "The Straight Story"), Proposal("No", "same")),  # 1974 against 1999
        ("Are Pylon and Rivermaya both rock bands?", ("Pylon", "Rivermaya"), Proposal("Yes", "both")),
        ("Are Bruce Dickinson and Roger Daltrey both airline pilots?", ("Bruce Dickinson", "Roger Daltrey"),
         Proposal("No", "one")),  # said of one, of the other not at all
        ("Are Bruce Dickinson and Roger Daltrey both singers and pilots?", ("Bruce Dickinson", "Roger Daltrey"),
         None),  # "pilot" found for one, "singer" for both: in part
        ("Are Pylon and Rivermaya in the same family?", ("Pylon", "Rivermaya"), None),  # no family named
        ("Were Pylon and Rivermaya formed in the same state?", ("Pylon", "Rivermaya"), None),  # Rivermaya: no state
        ("Are Pylon and Rivermaya in the same national league?", ("Pylon", "Rivermaya"), None),  # not a people
        ("Are Pylon and Rivermaya not rock bands?", ("Pylon", "Rivermaya"), None),  # a negation
        ("Are Pylon and Rivermaya both older bands?", ("Pylon", "Rivermaya"), None),  # a comparison
        ("Are Pylon and Oasis both rock bands?", ("Pylon", "Oasis"), None),  # Oasis has no sentence of its own
        ("Are The Castaway Cowboy and Rivermaya from the same country?", ("The Castaway Cowboy", "Rivermaya"),
         Proposal("No", "same")),
        ("Are Bruce Dickinson and The Straight Story from the same country?", ("Bruce Dickinson", "The Straight Story"),
         None),  # the film's sentences name no people
    ],
)  # fmt: skip
def test_a_yes_no_question_about_two_names_is_decided_by_their_own_sentences(question, named, decision):
    assert decide_yes_no(question, named, FILMS) == decision


PLACES = [
    "Lysichiton is a genus in the family Araceae.Orontium, sometimes called golden-club, is a genus of flowering "
    "plants in the family Araceae. Ageratum is a genus of flowering annuals from the family Asteraceae.",
    "Peraphyllum is a monotypic genus of flowering plants in the rose family. Arthropodium is a genus of plants in "
    "the subfamily Lomandroideae of the family Asparagaceae.",
    "Eatza Pizza was a buffet-style restaurant chain founded in Arizona in 1997. Your Pie is an American pizza "
    "concept started in Athens, Georgia in 2008. The Colorado River Aqueduct is a water conveyance in Southern "
    "California. Eastside Canal is an irrigation canal in Kern County, California. Lake Vega is a lake.",
]


@pytest.mark.parametrize(
    ("question", "named", "decision"),
    [
        ("Are Lysichiton and Ageratum in the same family?", ("Lysichiton", "Ageratum"), Proposal("No", "same")),
        ("Do Lysichiton and Orontium belong to the same family?", ("Lysichiton", "Orontium"), Proposal("Yes", "same")),
        ("Are Lysichiton and Ageratum of different families?", ("Lysichiton", "Ageratum"), Proposal("Yes", "same")),
        # "the rose family" names no family by its Latin name, and a subfamily is not a family
        ("Are Arthropodium and Peraphyllum in the same family?", ("Arthropodium", "Peraphyllum"), None),
        ("Were Eatza Pizza and Your Pie founded in the same state?", ("Eatza Pizza", "Your Pie"),
         Proposal("No", "same")),  # Arizona against Georgia
        # "Colorado" is the aqueduct's own name, not where it is: both are in California
        ("Are Colorado River Aqueduct and Eastside Canal in the same state?",
         ("Colorado River Aqueduct", "Eastside Canal"), Proposal("Yes", "same")),
        ("Are Eastside Canal and Lake Vega in the same state?", ("Eastside Canal", "Lake Vega"), None),  # no state
    ],
)  # fmt: skip
def test_a_family_or_a_us_state_is_compared_between_two_names_own_sentences(question, named, decision):
    assert decide_yes_no(question, named, PLACES) == decision


def test_a_decision_cites_the_texts_each_name_opens_before_one_that_only_names_it():
    texts = [
        "A 1990 tour of Asia took Rivermaya and Pylon to Manila.",  # names both, opens neither's
        "The weather was fine.",
        "Pylon was an American rock band from Athens, Georgia.",
        "Rivermaya is a Filipino rock band.",
    ]
    assert read_from(("Pylon", "Rivermaya"), texts) == (2, 3)
    assert read_from(("Pylon", "Oasis"), texts) == (2,)  # no text names Oasis
    assert read_from(("Pylon", "Rivermaya"), texts[:2]) == (0,)  # named only: the text that names them


# -- a name written only as what someone is known as -------------------------------------------------------------

ALIASED = [
    "Robert Fleischman (born March 11, 1953) is an American musician and songwriter. James Dixon Swan (born 28 "
    "April 1956), better known as Jimmy Barnes, is an Australian rock singer.",
]


def test_a_name_given_before_the_sentences_verb_makes_the_sentence_its_own():
    question = "Do Robert Fleischman and Jimmy Barnes have the same nationality?"
    assert decide_yes_no(question, ("Robert Fleischman", "Jimmy Barnes"), ALIASED) == Proposal("No", "same")
    assert date_after("Jimmy Barnes", ALIASED) == (1956, 4, 28)  # the date before the name is his
    assert decide("Who was born first, Robert Fleischman or Jimmy Barnes?", ("Robert Fleischman", "Jimmy Barnes"),
                  ALIASED) == Proposal("Robert Fleischman", "dates")  # fmt: skip


def test_a_name_after_the_verb_or_opening_a_later_sentence_is_read_as_before():
    texts = ["The 1990 tour was led by Jimmy Barnes.", "Cold Chisel is an Australian band formed in 1973."]
    assert decide_yes_no("Are Jimmy Barnes and Cold Chisel both bands?", ("Jimmy Barnes", "Cold Chisel"), texts) is None
    texts = [
        "The third studio album by Madonna was released in 1990.",  # names her before its verb, of the album
        "Madonna (born August 16, 1958) is an American singer.",  # opens with her: read first
    ]
    assert date_after("Madonna", texts) == (1958, 8, 16)
    assert read_from(("Madonna", "Cher"), texts) == (1,)


def test_each_word_of_a_compound_is_said_but_a_language_is_no_people():
    texts = [
        "Naser Mestarihi is a Jordanian singer-songwriter based in Doha. Justin Geever, known professionally as "
        "Justin Sane, is the lead guitarist and singer/songwriter of Anti-Flag.",
        "Elizabeth Jane Howard was an English novelist. Patrick White was an Australian writer, one of the most "
        "important English-language novelists of the 20th century.",
    ]
    named = ("Naser Mestarihi", "Justin Sane")
    assert decide_yes_no("Are Naser Mestarihi and Justin Sane both singers?", named, texts) == Proposal("Yes", "both")
    question = "Are both Elizabeth Jane Howard and Patrick White from the same country?"
    assert decide_yes_no(question, ("Elizabeth Jane Howard", "Patrick White"), texts) == Proposal("No", "same")


# -- a choice about how many ------------------------------------------------------------------------------------

GENERA = [
    "Fir (Abies) is a genus of 48–56 species of evergreen coniferous trees in the family Pinaceae.",
    "Chelone is a genus of four species of herbaceous perennials native to North America.",
    "Piers Sellers was a meteorologist. He flew on three Space Shuttle missions.",
    "Lodewijk van den Berg is a chemical engineer who flew on a 1985 Space Shuttle mission.",
]


@pytest.mark.parametrize(
    ("question", "offered", "decision"),
    [
        ("Which genus has more species, Fir or Chelone?", ("Fir", "Chelone"), Proposal("Fir", "counts")),  # 48 > 4
        ("Which genus has fewer species, Fir or Chelone?", ("Fir", "Chelone"), Proposal("Chelone", "counts")),
        ("Does Chelone or Fir have more species?", ("Chelone", "Fir"), Proposal("Fir", "counts")),
        # a year is no count of missions: Lodewijk van den Berg's sentences state none
        ("Who flew on more Space Shuttle missions, Piers Sellers or Lodewijk van den Berg?",
         ("Piers Sellers", "Lodewijk van den Berg"), None),
        ("Which genus has more members, Fir or Chelone?", ("Fir", "Chelone"), None),  # no count of members stated
        ("Which university graduates more number of students in a year, Fir or Chelone?", ("Fir", "Chelone"),
         None),  # a longer phrase after "more" asks something else
    ],
)  # fmt: skip
def test_a_choice_about_how_many_compares_the_counts_each_options_own_sentences_state(question, offered, decision):
    assert decide(question, offered, GENERA) == decision


HELMETS = [
    "Wearing a helmet is not required by law in Millbrook, but the co-op strongly recommends it. Free loan helmets"
    " are kept in lockers at the Depot.",
    "Cargo bikes are not lent overnight; children in the box must wear helmets.",
    "E-bikes are allowed on roads but banned from the trails.",
]


@pytest.mark.parametrize(
    ("question", "decision"),
    [
        ("Is a helmet required?", Proposal("No", "stated", (0,))),  # "not" right before an asked word
        ("Are the loan helmets free?", Proposal("Yes", "stated", (0,))),
        ("Must children in the box wear helmets?", Proposal("Yes", "stated", (1,))),  # the "not" is another clause's
        ("Are e-bikes allowed on the trails?", None),  # "allowed" and "trails" sit in two clauses
        ("Is a helmet required by the co-op?", None),  # no clause holds every word asked
        ("Is a helmet not required?", None),  # a question that denies is not decided by words found
        ("Is a helmet required after dark?", None),  # an order in time
        ("Is it free?", None),  # asks one word: too little to decide by
    ],
)
def test_a_yes_no_question_about_one_thing_is_decided_by_a_clause_holding_all_it_asks(question, decision):
    assert decide_stated(question, HELMETS) == decision


def test_clauses_that_disagree_decide_nothing():
    said = ["Wearing a helmet is not required by law.", "A helmet is required on group rides."]
    assert decide_stated("Is a helmet required?", said) is None
    assert decide_stated("Is a helmet required?", said[1:]) == Proposal("Yes", "stated", (0,))
    assert decide_stated("Is a helmet required?", ["A helmet isn’t required."]) == Proposal("No", "stated", (0,))


def test_a_list_items_no_is_not_the_next_items():
    plans = "- **Rider**: a plan with no monthly fee.\n- **Commuter**: a monthly plan that includes unlimited trips."
    assert decide_stated("Does the Commuter plan include unlimited trips?", [plans]) == Proposal("Yes", "stated", (0,))
    assert decide_stated("Does the Rider plan have a monthly fee?", [plans]) == Proposal("No", "stated", (0,))
