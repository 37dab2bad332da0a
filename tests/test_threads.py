"""The thread policy (core.threads): every ONNX Runtime session sleeps when idle, BLAS runs one thread, and
`perf` can say what each pool ran with."""
from __future__ import annotations

import numpy as np
import pytest

from core.threads import ORT_SPINNING, cores, one_blas_thread, session_options, thread_report

SPINNING = "session.intra_op.allow_spinning"


def test_session_options_sleep_between_calls_and_use_every_core_unless_told() -> None:
    assert session_options().get_session_config_entry(SPINNING) == ORT_SPINNING == "0"
    assert session_options().intra_op_num_threads == cores() and session_options(1).intra_op_num_threads == 1
    assert session_options().inter_op_num_threads == 1


def test_the_prefilters_sessions_are_made_by_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    import core.retrieval.prefilter as prefilter

    if prefilter.exact_code_limit() is None:
        pytest.skip("no exact integer GEMM here: the float32 prefilter has no session")
    vectors = np.eye(64, dtype=np.float32)
    scores = prefilter.Int8Scores(vectors, prefilter.CHUNK, prefilter.exact_code_limit())
    made = dict(scores._sessions)  # both with the index, none inside a first answer
    scores.scores(vectors[:1])
    scores.scores(vectors[:3])
    assert scores._sessions == made
    assert {threads: s.get_session_options().get_session_config_entry(SPINNING)
            for threads, s in scores._sessions.items()} == {1: "0", cores(): "0"}


@pytest.mark.slow
def test_the_query_encoders_session_is_made_by_the_policy() -> None:
    from core.retrieval.assemble import load_encoder
    from core.settings import Settings

    encoder = load_encoder(Settings.from_env(env={}).embedding_model, "onnx")
    options = encoder.session.get_session_options()
    assert options.get_session_config_entry(SPINNING) == "0" and options.intra_op_num_threads == cores()


def test_the_report_names_blas_threads_and_the_cpus_extensions() -> None:
    one_blas_thread()
    report = thread_report()
    assert report["blas"] and all(row["threads"] == 1 for row in report["blas"])
    assert report["onnxruntime"] == {"intra_op_threads": cores(), "inter_op_threads": 1, "spinning": False}
    assert set(report["cpu_flags"]) <= {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "fma"}
