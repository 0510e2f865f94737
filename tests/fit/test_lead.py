"""How often the short answer is right where the sentences are not: counted on training runs only, written into
the critic weights, and read back by the engine's confidence."""

from __future__ import annotations

import json

from factories import write_run

from selfrag.cli import main
from selfrag.engine.calibration import load_critic_model
from selfrag.engine.state import UNSETTLED
from selfrag.fit.lead import decided_counts, lead_counts, lead_of
from selfrag.result import DECIDED

YES_NO = "Are Medici and Senet both board games?"
FACTOID = "Which label released both films?"


def lead_record(question, answers, lead, sentence, status="ok"):
    prediction = f"{lead} {sentence}".strip()
    return {"status": status, "question": question, "answers": answers, "prediction": prediction,
            "segments": [{"text": sentence}]}  # fmt: skip


def test_the_lead_is_what_the_prediction_says_before_the_sentences():
    assert lead_of(lead_record(YES_NO, ["yes"], "Yes.", "Medici is a board game.")) == "Yes."
    assert lead_of(lead_record(YES_NO, ["yes"], "", "Medici is a board game.")) == ""
    assert lead_of({"prediction": "Yes.", "segments": []}) == ""
    assert lead_of({"prediction": "No.", "segments": [], "lead_from": "same"}) == "No."  # it stood alone


def test_only_short_answers_over_wrong_sentences_are_counted():
    records = [
        lead_record(YES_NO, ["yes"], "Yes.", "Medici is a board game."),  # counted, right
        lead_record(YES_NO, ["no"], "Yes.", "Senet is a board game."),  # counted, wrong
        lead_record(YES_NO, ["no"], UNSETTLED, "Senet is old."),  # no short answer stated: counted whole, apart
        lead_record(FACTOID, ["Walt Disney Pictures"], "Walt Disney Pictures.", "Walt Disney Pictures released it."),
        lead_record(FACTOID, ["Walt Disney Pictures"], "Paramount.", "The film is by Carbyn."),  # counted, wrong
        lead_record(FACTOID, ["Walt Disney Pictures"], "Carbyn.", "The film is by Carbyn."),  # restates the sentences
        lead_record(YES_NO, ["yes"], "Yes.", "x", status="failed"),
        lead_record("Why is the sky blue?", ["scattering"], "Scattering.", "It is blue."),  # no kind
    ]
    assert lead_counts(records) == {"factoid": (0, 1), "yes_no": (1, 2), "yes_no_unsettled": (0, 1)}


def test_the_models_yes_or_no_held_back_is_still_counted_and_the_unsettled_answer_whole():
    def held(answers, reply, sentence="Senet is old."):
        return {**lead_record(YES_NO, answers, UNSETTLED, sentence), "lead_from": "model", "lead_reply": reply}

    records = [
        held(["no"], "No, they are not."),  # the model was right, though its reply was not printed
        held(["no"], "Yes"),  # wrong
        held(["yes"], "Maybe"),  # no yes or no to count
        held(["no"], "Yes", "No, Senet is not a board game."),  # the sentence says it: the answer is right whole
    ]
    assert lead_counts(records) == {"yes_no": (1, 2), "yes_no_unsettled": (1, 4)}


def test_a_factoid_held_back_is_counted_as_if_printed():
    def held(answers, kept, sentence="The film is by Carbyn."):
        return {
            **lead_record(FACTOID, answers, "", sentence),
            "lead_from": "model",
            "lead_reply": kept,
            "lead_held": kept,
        }

    records = [
        held(["Walt Disney Pictures"], "Walt Disney Pictures."),  # right, though not printed
        held(["Walt Disney Pictures"], "Paramount."),  # wrong
        held(["Walt Disney Pictures"], "Carbyn."),  # restates the sentence: not counted
        held(["Walt Disney Pictures"], "Paramount.", "Walt Disney Pictures released it."),  # the sentences were right
        {**lead_record(FACTOID, ["Walt Disney Pictures"], "", "The film is by Carbyn."), "lead_reply": "Paramount"},
    ]
    assert lead_counts(records) == {"factoid": (1, 2)}


def test_a_choice_decided_by_the_documents_dates_is_counted_apart_from_the_models_choices():
    choice = "Who was born first, Pablo Trapero or Aleksander Ford?"
    dated = {
        **lead_record(choice, ["Aleksander Ford"], "Aleksander Ford.", "Pablo Trapero is a director."),
        "lead_from": "dates",
    }
    guessed = lead_record(choice, ["Aleksander Ford"], "Pablo Trapero.", "Both were film directors.")
    assert lead_counts([dated, guessed]) == {"choice": (0, 1), "dates": (1, 1)}


def test_fit_lead_adds_the_counts_to_the_weights_and_refuses_what_is_not_training_data(tmp_path, capsys):
    rows = [lead_record(YES_NO, ["no"], "No.", "Senet is a board game."), lead_record(YES_NO, ["no"], "Yes.", "Senet.")]
    out = tmp_path / "w.json"
    assert main(["bench", "fit-lead", str(lead_run(tmp_path / "train", records=rows)), "--out", str(out)]) == 0
    fitted, shipped = load_critic_model(out), load_critic_model()
    pooled = {kind: shipped.lead[kind] for kind in DECIDED if kind in shipped.lead}  # over a pool: a run keeps them
    assert pooled and fitted.lead == {"yes_no": (1, 2), **pooled} and fitted.supported == shipped.supported
    assert "yes_no 1 of 2" in capsys.readouterr().err
    again = lead_run(tmp_path / "again", records=rows)  # the same questions answered in a second run count once
    assert main(["bench", "fit-lead", str(tmp_path / "train"), str(again), "--out", str(out)]) == 0
    fitted = load_critic_model(out)
    assert fitted.lead["yes_no"] == (1, 2) and fitted.fitted_on["lead"].startswith("2 training answers of 2 run")
    made = lead_run(tmp_path / "made", records=rows, unanswerable=True)  # the same ids without their documents: others
    apart = tmp_path / "apart.json"
    assert main(["bench", "fit-lead", str(tmp_path / "train"), str(made), "--out", str(apart)]) == 0
    assert load_critic_model(apart).lead["yes_no"] == (2, 4)
    capsys.readouterr()
    assert main(["bench", "fit-lead", "--out", str(out)]) == 2 and "--decided-on" in capsys.readouterr().err

    guessed = [rows[1], lead_record(FACTOID, ["Walt Disney Pictures"], "Paramount.", "The film is by Carbyn.")]
    only = [str(lead_run(tmp_path / "only", records=guessed)), "--only", "factoid", "--weights", str(out)]
    assert main(["bench", "fit-lead", *only, "--out", str(out)]) == 0
    kept = load_critic_model(out).lead  # the run's yes/no would count 0 of 1: not refitted
    assert kept["factoid"] == (0, 1) and kept["yes_no"] == (1, 2)
    for bad in ("factoidz", "dates", ""):  # an unknown kind, one the documents decide, none
        assert main(["bench", "fit-lead", *only[:2], bad, "--out", str(tmp_path / "bad.json")]) == 2
        assert "--only needs" in capsys.readouterr().err and not (tmp_path / "bad.json").exists()

    refused = tmp_path / "refused.json"
    for folder, code, message in (
        (lead_run(tmp_path / "test", split="all", records=rows), 2, "fit only on training ids"),
        (lead_run(tmp_path / "nolead", lead=False, records=rows), 2, "without --lead"),
        (lead_run(tmp_path / "empty", records=[]), 1, "nothing to fit"),
    ):
        assert main(["bench", "fit-lead", str(folder), "--out", str(refused)]) == code
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and not refused.exists()


TEXTS = ["Ann Lee (born 1 May 1900) was a Polish director. Bob Day (born 3 June 1950) was an American director."]


def test_the_documents_decisions_are_counted_by_what_decided_them():
    asked = [
        ("Who was born first, Ann Lee or Bob Day?", ["Ann Lee"], TEXTS),  # dates, right
        ("Who is younger, Ann Lee or Bob Day?", ["Ann Lee"], TEXTS),  # dates pick Bob Day: a gold that disagrees
        ("Which director was from Poland, Ann Lee or Bob Day?", ["Ann Lee"], TEXTS),  # traits, right
        ("Which director made more films, Ann Lee or Bob Day?", ["Ann Lee"], TEXTS),  # a comparison: not decided
        ("Was Ann Lee a director?", ["yes"], TEXTS),  # one name: a clause states it; right
        ("Are Ann Lee and Bob Day from the same country?", ["no"], TEXTS),  # same: Polish, American; right
        ("Are Ann Lee and Bob Day both directors?", ["yes"], TEXTS),  # both, right
        ("Are Ann Lee and Bob Day both Polish?", ["yes"], TEXTS),  # one: said of her only; a gold that disagrees
        ("Are Ann Lee and Bob Day in the same family?", ["no"], TEXTS),  # not decided
    ]
    assert decided_counts(asked) == {
        "both": (1, 1), "dates": (1, 2), "one": (0, 1), "same": (1, 1), "stated": (1, 1), "traits": (1, 1)
    }  # fmt: skip


def test_fit_lead_counts_the_decisions_over_a_training_pool_and_keeps_the_models_counts(tmp_path, capsys):
    lines = []
    for n in range(520):  # 500 of them are the reserved test pool; the other 20 are training questions
        a, b = f"Ann Lee{n}", f"Bob Day{n}"
        question = f"Who was born first, {a} or {b}?" if n % 2 else f"Which director was from Poland, {a} or {b}?"
        knowledge = f"{a} (born 1 May 1900) was a Polish director. {b} (born 3 June 1950) was an American director."
        lines.append({"knowledge": knowledge, "question": question, "right_answer": a, "hallucinated_answer": b})
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "w.json"
    assert main(["bench", "fit-lead", "--decided-on", "halueval", "--data", str(tmp_path), "--out", str(out)]) == 0
    fitted, shipped = load_critic_model(out), load_critic_model()
    decided = {kind: fitted.lead[kind] for kind in ("dates", "traits")}
    assert sum(of for _, of in decided.values()) == 20 and all(right == of for right, of in decided.values())
    model_kinds = [kind for kind in shipped.lead if kind not in decided]
    assert model_kinds and all(fitted.lead[kind] == shipped.lead[kind] for kind in model_kinds)  # they stay
    assert "20 questions" in fitted.fitted_on["lead_decided"] and fitted.supported == shipped.supported


def lead_run(folder, *, records=(), lead=True, **options):
    """A training run folder whose system was run with `--lead` (or without, `lead=False`)."""
    return write_run(folder, records, system={"kind": "selfrag", "config": {"lead": lead}}, **options)
