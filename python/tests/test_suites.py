"""The conformance suites and the training workload from Python
(polychip.certify, polychip.train): they run in the polychip command and
return what its files say."""
import json
import os

import numpy as np
import pytest

import polychip

ONE_CASE = "rmsnorm/f32/16x1023/exact/seed=1"


def test_the_command_is_found_beside_the_module():
    assert os.access(polychip.suites.command(), os.X_OK)


def test_a_run_that_passes_reads_back_its_results(tmp_path):
    run = polychip.certify("cpu", case=ONE_CASE, output_dir=str(tmp_path))
    assert run.passed and run.exit_code == 0 and run.verdict == "Pass"
    assert run.output_dir == str(tmp_path)
    assert (tmp_path / "results.json").exists() and (tmp_path / "junit.xml").exists()
    assert run.adapter("cpu.host")["verdict"] == "Pass"
    assert [c["id"] for c in run.results["cases"]] == [ONE_CASE]
    assert run.failed_cases() == []
    assert "overall: Pass" in run.summary
    # One case is a partial run: a Pass, no certification.
    assert len(run.caveats) == 1 and "a partial run" in run.caveats[0], run.caveats
    assert not run.certified


def test_a_run_of_some_ops_is_a_partial_run(tmp_path):
    run = polychip.certify("cpu", ops=["neg", "relu"], output_dir=str(tmp_path))
    assert run.passed and run.results["run"]["ops"] == ["neg", "relu"]
    assert {c["op"] for c in run.results["cases"]} == {"neg", "relu"}
    assert not run.certified
    assert run.caveats == ["a partial run: only the %d cases of ops neg, relu (--ops) ran, not "
                           "every case of level quick; certify the whole level for a "
                           "certification" % len(run.results["cases"])]


def test_a_pass_under_loosened_tolerances_is_not_a_certification(tmp_path):
    # sim.bf16acc accumulates gemm in bf16: it fails an f32 gemm under
    # polychip's tolerances; a file that widens gemm's lets it pass, and says so.
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "conformance", "data",
                           "tolerances.json")) as f:
        table = json.load(f)
    table["ops"]["gemm"] = {"rtol": {"f32": 0.5}, "atol_factor": {"f32": 0.01}}
    loose = tmp_path / "loose.json"
    loose.write_text(json.dumps(table))
    gemm_case = "gemm/f32/64x64x64/seed=1"
    assert not polychip.certify(["sim.bf16acc"], case=gemm_case).passed
    run = polychip.certify(["sim.bf16acc"], case=gemm_case, extra_args=["--tolerances", str(loose)])
    assert run.passed and run.verdict == "Pass"
    assert not run.certified
    assert len(run.caveats) == 2 and "loosen" in run.caveats[0], run.caveats
    assert "overall: Pass (with 2 caveats)" in run.summary


def test_a_bring_up_run_is_not_a_certification(tmp_path):
    # The bring-up profile requires few pairs; a Pass under it certifies nothing.
    run = polychip.certify("cpu", case=ONE_CASE, profile="bring-up", output_dir=str(tmp_path))
    assert run.passed and run.verdict == "Pass"
    assert not run.certified and run.results["certified"] is False
    assert any("bring-up" in c for c in run.caveats), run.caveats


def test_a_failure_waived_by_the_vendors_own_file_is_not_a_certification(tmp_path):
    # sim.ignored_eps fails ONE_CASE; the vendor's own waiver turns it into Waived.
    waivers = tmp_path / "waivers.json"
    waivers.write_text(json.dumps({"schema": "polychip.waivers/1", "waivers": [{
        "adapter": "sim.ignored_eps", "op": "rmsnorm", "dtype": "f32",
        "kind": "expected_failure", "reason": "eps ignored", "case": ONE_CASE}]}))
    run = polychip.certify(["sim.ignored_eps"], case=ONE_CASE,
                           extra_args=["--waivers", str(waivers)])
    assert run.passed and run.verdict == "Pass"
    assert not run.certified
    assert len(run.caveats) == 2 and "Waived" in run.caveats[0], run.caveats


def test_a_defective_chip_fails_and_its_failing_cases_are_named():
    # sim.ignored_eps: rmsnorm uses 1e-5 whatever eps it is given (the case's eps is not).
    run = polychip.certify(["sim.ignored_eps"], case=ONE_CASE)
    assert not run.passed and run.exit_code == 1 and run.verdict == "Fail"
    assert run.adapter("sim.ignored_eps")["verdict"] == "Fail"
    assert [(c["id"], c["verdict"]) for c in run.failed_cases()] == [(ONE_CASE, "Fail")]
    message = run.failed_cases()[0]["message"]
    assert "beyond tolerance" in message and "where exact inputs allow 0" in message, message


def test_a_usage_error_raises_with_the_commands_message():
    with pytest.raises(ValueError, match="no device 'no.such'"):
        polychip.certify("no.such")
    with pytest.raises(ValueError, match="adapters is empty"):
        polychip.certify([])


def test_arguments_of_the_wrong_kind_are_refused_before_the_command_runs(tmp_path):
    for adapters in (None, 3, ["cpu", None], {"cpu": 1}):
        with pytest.raises(TypeError, match="adapters is a name or a list of names"):
            polychip.certify(adapters)
    for timeout in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="timeout is in seconds and must be positive"):
            polychip.certify("cpu", timeout=timeout)
        with pytest.raises(ValueError, match="timeout is in seconds and must be positive"):
            polychip.train(str(tmp_path), steps=1, preset="tiny", timeout=timeout)


def test_training_returns_the_run_directory_and_its_curves(tmp_path):
    run = polychip.train(str(tmp_path), adapter="cpu", steps=3, preset="tiny")
    assert run.metrics.shape == (3, 4)
    assert run.metrics[:, 0].tolist() == [1.0, 2.0, 3.0]
    assert np.all(np.isfinite(run.losses)) and np.all(run.grad_norms > 0)
    for name in ("model.safetensors", "config.json", "training_state.json", "metrics.npy"):
        assert (tmp_path / name).exists(), name
    # Two more steps from the checkpoint: the first three are kept as they were.
    resumed = polychip.train(str(tmp_path), adapter="cpu", steps=5, preset="tiny", resume=True)
    assert resumed.metrics.shape == (5, 4)
    assert np.array_equal(resumed.metrics[:3], run.metrics)


def test_training_on_an_unknown_device_raises_naming_it(tmp_path):
    with pytest.raises(ValueError, match="no device 'no.such'"):
        polychip.train(str(tmp_path), adapter="no.such", steps=1, preset="tiny")


def test_a_polychip_command_that_is_not_executable_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("POLYCHIP_COMMAND", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="POLYCHIP_COMMAND=.*missing"):
        polychip.certify("cpu")
