"""Training, apart from the runtime: fitting the weights the engine reads. The engine never imports this package;
the CLI's fit commands, `selfrag calibrate` and the benchmarks do.

critic.py   the critic's heads, support threshold, answers head, confidence map and abstention cut, from judged rows
answers.py  the answered head's inputs read back from training runs (`selfrag bench fit-confidence`)
lead.py     how often the short answer is right, per kind and per deciding rule (`selfrag bench fit-lead`)
claims.py   the claim protocol's scorer from training claims and runs (`selfrag bench fit-claims`)

`answers`, `lead` and `claims` read benchmark runs and datasets (`selfrag.bench`), so they sit in the benchmarks'
layer (tests/test_layout.py); `critic` reads only judged rows.
"""
