"""A choice question about time is decided by the two options' dates in the documents, where they give both."""

from __future__ import annotations

import pytest

from selfrag.engine.compare import asked_order, date_after, decide

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
    assert decide(question, offered, TEXTS) == answer


def test_a_tie_or_a_missing_date_decides_nothing():
    same_year = ["Summit was created in 1990.", "Crosstrack was created in March 1990."]
    assert decide("Was Summit or Crosstrack created first?", ("Summit", "Crosstrack"), same_year) is None
    months = ["Summit was created in May 1990.", "Crosstrack was created in March 1990."]
    assert decide("Was Summit or Crosstrack created first?", ("Summit", "Crosstrack"), months) == "Crosstrack"
    one = ["Summit was created in 1990.", "Crosstrack is a ski resort."]
    assert decide("Was Summit or Crosstrack created first?", ("Summit", "Crosstrack"), one) is None
