"""The result model (grader.results): one typed model with one serializer, read as objects by every consumer,
writing back byte for byte the results.json it read (so resumed and merged classes keep their files)."""

import json

import pytest

from grader.check.causes import observation
from grader.cohort import judges
from grader.feedback import integrity, page, report
from grader.judging import results_json
from grader.results import ResultsFormatError, SubmissionResult
from grader.results import TestResult as Verdict  # not a pytest class
from grader.sandbox.limits import Limit

MAXIMA = {"projection": 10, "scaling": 15.0, "masking": 15, "dropout": 10, "causal_attention": 20, "mha_wrapper": 10,
          "multihead_attention": 20}


def graded():
    """A result as the judge makes one: a step's points shared in thirds, int and float maxima, a limit hit, a
    failure with the fault model's observation, a hidden check, a loading note."""
    third = 10 / 3
    tests = [Verdict(f"projection: part {k}", "projection", third, third, "", "visible") for k in range(3)]
    tests += [Verdict("scaling: scores divided by sqrt(d_k)", "scaling", 0.0, 15, "the softmax is too peaked; "
                         "check the scale", "visible", {"observations": [observation("cause", "no_scale")]}),
              Verdict("masking: rows sum to one", "masking", 0, 15, "time limit: 10 s while forward",
                         "after_published", {}, Limit.TIME)]
    return SubmissionResult("zoë", "/tmp/zoë.py", tests, problems=["line 3: %matplotlib inline was left out"],
                            seconds=1.23456, cpu={"judge": 0.0712345, "worker": 0.11}, fingerprint="f" * 32,
                            sandbox={"seal": "ok"})


def test_a_result_read_back_writes_the_same_bytes():
    text = results_json.results_text(graded(), MAXIMA)
    again = SubmissionResult.from_json(text, "ignored")
    assert again.to_json() == text
    assert results_json.parse_results_text(text, "x").to_json() == text
    assert json.loads(text)["tests"][3]["max_score"] == 15 and '"max_score": 15,' in text  # an int stays an int


def test_the_writer_gives_gradescope_the_same_keys_in_the_same_order():
    data = results_json.gradescope_json(graded(), MAXIMA)
    assert list(data) == ["score", "output", "tests", "extra_data", "output_format"]
    assert list(data["extra_data"]) == ["submission", "steps", "max_steps", "seconds", "cpu", "problems", "fingerprint",
                                        "sandbox", "diagnosis", "limits"]
    assert list(data["tests"][0]) == ["name", "score", "max_score", "output", "visibility"]
    assert data["score"] == 10.0 and data["extra_data"]["steps"]["projection"] == 10.0
    assert data["tests"][4]["extra_data"] == {"limit": "time"}
    assert data["extra_data"]["limits"] == [{"step": "masking", "kind": "time",
                                             "message": "time limit: 10 s while forward"}]


def test_finishing_leaves_the_graded_result_alone():
    result = graded()
    before = [(test.output, dict(test.details)) for test in result.tests]
    done = results_json.finished(result, MAXIMA)
    assert [(test.output, test.details) for test in result.tests] == before and result.output == ""
    assert done.output_format == "md" and done.diagnosis is not None and done.max_steps == MAXIMA


def test_each_test_stores_its_step():
    result = SubmissionResult.from_json(results_json.results_text(graded(), MAXIMA))
    assert [test.step for test in result.tests] == ["projection"] * 3 + ["scaling", "masking"]
    assert [test.short_name for test in result.tests_of("masking")] == ["rows sum to one"]
    assert result.tests_of("masking")[0].limit is Limit.TIME and not result.tests_of("masking")[0].passed


@pytest.mark.parametrize("data", [[], {"tests": {}}, {"tests": [{"name": 3, "score": 0, "max_score": 1}]},
                                  {"tests": [{"name": "masking: x", "score": "0", "max_score": 1}]},
                                  {"tests": [{"name": "masking: x", "score": True, "max_score": 1}]},
                                  {"tests": [], "extra_data": [1]}, {"tests": [], "score": "9"},
                                  {"tests": [], "extra_data": {"max_steps": [1]}}])
def test_anything_else_is_refused_as_not_a_results_file(data):
    with pytest.raises(ResultsFormatError):
        SubmissionResult.from_dict(data)


def test_the_readers_take_the_model(tmp_path):
    text = results_json.results_text(graded(), MAXIMA)
    result, data = SubmissionResult.from_json(text), json.loads(text)
    assert page.markdown(result) == page.markdown(data) == data["output"]
    assert page.html_page(result) == page.html_page(data)
    assert integrity.failure_signatures(result) == integrity.failure_signatures(data)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "zoë.json").write_text(text, encoding="utf-8")
    [submission], maxima = report.load(tmp_path)
    assert submission.tests == result.tests and submission.score == 10.0 and maxima["scaling"] == 15.0
    assert page.write_pages(tmp_path) == 1 and "Feedback for zoë" in (tmp_path / "feedback" / "zoë.html").read_text()


def test_the_report_names_a_results_file_that_is_not_one(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.json").write_text('{"tests": [{"name": "masking: x"}]}', encoding="utf-8")
    with pytest.raises(report.ResultsError, match="a.json is not a results file of this grader"):
        report.load(tmp_path)


def test_a_judge_sends_its_result_as_one_json_object_not_text_inside_json():
    done = results_json.finished(graded(), MAXIMA)
    delivered = []
    judges._grade_taken(judges.ItemQueue([("zoë", None)]), lambda item: done, 1,
                        lambda name, data: delivered.append((name, data)))
    assert delivered == [("zoë", done.to_dict())]
    assert SubmissionResult.from_dict(json.loads(json.dumps(delivered[0][1]))).to_json() == done.to_json()


def test_every_result_of_the_catalogue_reads_back_byte_for_byte(graded_bugs, maxima):
    for name, result in graded_bugs.items():
        text = results_json.results_text(result, maxima)
        assert results_json.parse_results_text(text, name).to_json() == text, name
