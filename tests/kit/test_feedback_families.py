"""Issue 27's families, through the student's own check command (`python check.py STEP FILE` in a release).

Each family of mistakes the issue found told wrongly or not at all is checked the way a student meets it:
NaN told by where it sits (never "softmax over the wrong axis" for a +inf fill, never "the mask hides
everything" for 0 x -inf), quantities measured and said (the scale the code used, what the variance
measures, whose seed the draws follow), crashes read by running the student's code on inputs where the
likely mistake does not raise, heads merged in the wrong order named as such, the shared-heads structure
told in words, the masking step's fills named as in CausalAttention's; and the release's own problems: a
broken torch/numpy pair, a renamed exercise file, a notebook cell that failed to run.
"""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from grader.build.exercises import clean_solution, code_sections, exercise_module, notebook, release_files
from grader.check.causes import CAUSES
from grader.faults.learners import DEVELOPMENT_BUGS

pytestmark = pytest.mark.kit

CAUSAL_FILL = "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
CAUSAL_LINES = ("        attn_scores = queries @ keys.transpose(1, 2)\n" + CAUSAL_FILL)
MASKING_FILL = "    masked = scores.masked_fill(hidden, -torch.inf)\n"
SCALED = "    return torch.softmax(scores / d_k**0.5, dim=-1)\n"
MERGE = "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
WRAPPER_HEADS = (
    "            [\n"
    "                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
    "                for _ in range(num_heads)\n"
    "            ]\n"
)
DRAWS = ("    W_query = torch.rand(d_in, d_out)\n"
         "    W_key = torch.rand(d_in, d_out)\n"
         "    W_value = torch.rand(d_in, d_out)\n")

LINEAR = next(bug for bug in DEVELOPMENT_BUGS if bug.id == "dev27_causal_linear_weight_matmul")

# (family, step, (find, replace), the cause the check must name or None, texts the output must hold,
# causes it must never name)
FAMILIES = [
    ("NaN: the future filled with +inf (masking)", "masking",
     (MASKING_FILL, "    masked = scores.masked_fill(hidden, torch.inf)\n"), "fill_positive_inf", (),
     ("softmax_dim", "mask_all")),
    ("NaN: the future filled with +inf (CausalAttention)", "causal_attention",
     (CAUSAL_LINES, CAUSAL_LINES.replace("-torch.inf)", "torch.inf)")), "fill_positive_inf", (),
     ("softmax_dim", "mask_all")),
    ("NaN: an additive mask built as mask * -inf", "masking",
     (MASKING_FILL, "    masked = scores + hidden.float() * -torch.inf\n"), None, ("every row is NaN",),
     ("mask_all", "softmax_dim", "fill_positive_inf")),
    ("heads merged with view before transpose", "multihead_attention",
     (MERGE, MERGE.replace(".transpose(1, 2).contiguous()", ".contiguous()")), "merge_no_transpose",
     ("!softmax scale", "!mask pattern"), ("split_no_transpose",)),
    ("measured: d_k**1/2", "scaling", (SCALED, SCALED.replace("d_k**0.5", "d_k**1/2")), "scale_precedence",
     ("your scores are divided by", "sqrt(d_k) is"), ()),
    ("measured: scaled by the number of keys", "scaling",
     (SCALED, SCALED.replace("d_k**0.5", "scores.shape[-1]")), "scale_num_keys", ("your scores are divided by",),
     ()),
    ("measured: a variance that is a standard deviation", "scaling",
     ("    variance_before = dots.var(unbiased=False).item()\n",
      "    variance_before = dots.std(unbiased=False).item()\n"), "variance_is_std", ("about sqrt(dim)",), ()),
    ("measured: products never summed", "scaling",
     ("    dots = (q * k).sum(dim=-1)\n", "    dots = q * k\n"), "dots_not_summed", ("your variance_before is",),
     ()),
    ("measured: the generator reseeded inside init_qkv_weights", "projection",
     (DRAWS, "    torch.manual_seed(123)\n" + DRAWS), "init_reseeded", ("torch.manual_seed(123)",), ()),
    ("measured: one fused draw split", "projection",
     (DRAWS, "    W_query, W_key, W_value = torch.rand(d_in, 3 * d_out).chunk(3, dim=-1)\n"), "init_fused", (), ()),
    ("repair: keys not transposed", "scaling",
     ("    return queries @ keys.transpose(-2, -1)\n", "    return queries @ keys\n"), "keys_not_transposed", (),
     ()),
    ("repair: the mask sized from the batch axis", "causal_attention",
     (CAUSAL_LINES, CAUSAL_LINES.replace("[:num_tokens, :num_tokens]", "[:b, :b]")), "mask_sliced_by_batch", (),
     ()),
    ("repair: a mask unsqueezed on another axis is not the batch's", "causal_attention",
     (CAUSAL_LINES, CAUSAL_LINES.replace("[:num_tokens, :num_tokens]", "[:num_tokens, :num_tokens].unsqueeze(-1)")),
     "mask_shape", (), ("mask_sliced_by_batch",)),
    ("crash read: x @ W.weight", "causal_attention",
     (LINEAR.find, LINEAR.replace), "linear_weight_matmul", (), ()),
    ("the student trial: one head shared", "mha_wrapper",
     (WRAPPER_HEADS, "            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)] * num_heads\n"),
     "heads_shared", (), ()),
    ("masking step: filled with 0", "masking",
     (MASKING_FILL, "    masked = scores.masked_fill(hidden, 0)\n"), "zero_fill", ("count as 0",), ("no_mask",)),
    ("masking step: masked_fill without _", "masking",
     (MASKING_FILL, "    masked = scores\n    scores.masked_fill(hidden, -torch.inf)\n"), "no_mask", (),
     ("zero_fill",)),
    # Before: "the softmax is missing" (weights above one: dropout's rescaling, read as no softmax). Now: the
    # temperature probe reads a softmax, and the rescaling faults need eval mode to drop nothing.
    ("wrong cause: F.dropout left on in eval mode", "causal_attention",
     ("        attn_weights = self.dropout(attn_weights)\n        return attn_weights @ values\n",
      "        attn_weights = torch.nn.functional.dropout(attn_weights, self.dropout.p)\n"
      "        return attn_weights @ values\n"), "dropout_in_eval", (),
     ("no_softmax", "dropout_no_rescale")),
    # Before: "the softmax is taken over the wrong axis" (NaN on the future, 0/0 from a sum over the batch).
    ("wrong cause: renormalised by a sum over the first axis", "masking",
     ("    return masked / masked.sum(dim=-1, keepdim=True)\n", "    return masked / masked.sum(dim=0, keepdim=True)\n"),
     "renorm_columns", (), ("softmax_dim",)),
    # Before: torch's raw error for each of these crashes. Now: the crash read, or the repair that runs.
    ("crash read: head_dim a float", "multihead_attention",
     ("        self.head_dim = d_out // num_heads\n", "        self.head_dim = d_out / num_heads\n"), "head_dim_wrong",
     (), ()),
    ("crash read: SelfAttention_v1's keys not transposed", "scaling",
     ("        values = x @ self.W_value\n        attn_scores = queries @ keys.T\n",
      "        values = x @ self.W_value\n        attn_scores = queries @ keys\n"), "keys_not_transposed", (), ()),
    ("repair: causal_attention_weights' mask sized from the batch axis", "masking",
     ("    n = scores.shape[-1]\n    hidden = causal_mask(n)", "    n = scores.shape[0]\n    hidden = causal_mask(n)"),
     "mask_sliced_by_batch", (), ()),
]

# Simulates PyTorch 2.1/2.2 under numpy 2: torch imports, and every tensor <-> array step raises as they do.
BROKEN_PAIR = '''
import numpy, torch
def _unavailable(*args, **kwargs):
    raise RuntimeError("Numpy is not available")
torch.Tensor.numpy = _unavailable
torch.from_numpy = _unavailable
numpy.__version__ = "2.1.0"
torch.__version__ = "2.2.2+cpu"
'''


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release") / "attention"
    exercise = exercise_module()
    for name, text in release_files(exercise, notebook(code_sections(exercise))).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def edited(find, replace):
    source = clean_solution()
    assert source.count(find) == 1, find
    return source.replace(find, replace)


def check(folder, *args, env=None):
    done = subprocess.run([sys.executable, "check.py", *args], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=env)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("family, step, edit, cause, texts, never", FAMILIES, ids=[item[0] for item in FAMILIES])
def test_the_students_check_tells_the_family(release, family, step, edit, cause, texts, never):
    (release / "mine.py").write_text(edited(*edit))
    code, output = check(release, step, "mine.py")
    assert code == 1, output
    assert "Traceback" not in output and "KeyError" not in output, output
    wrong = [key for key in never if CAUSES[key].title in output]
    assert not wrong, f"{family}: a wrong cause is named: {wrong}\n{output}"
    if cause:
        assert CAUSES[cause].title in output, f"{family}: {cause} not named\n{output}"
    else:
        named = [key for key, known in CAUSES.items() if known.title in output]
        assert not named and "what is wrong: " in output, f"{family}: {named}\n{output}"
    for text in texts:  # "!text": a property that must not be blamed
        if text.startswith("!"):
            assert text[1:] not in output, f"{family}: {text[1:]!r} blamed\n{output}"
        else:
            assert text in output, f"{family}: {text!r} not said\n{output}"


def test_a_broken_torch_numpy_pair_is_said_with_the_command_that_fixes_it(release, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BROKEN_PAIR)
    (release / "solved.py").write_text(clean_solution())
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    code, output = check(release, "masking", "solved.py", env=env)
    assert code == 3, output
    assert 'pip install "numpy<2"' in output and "PyTorch 2.2.2 cannot use numpy 2.1.0" in output, output
    assert "✗" not in output and "Traceback" not in output, output  # no check blames the student's code
    code, output = check(release, "masking", "solved.py")
    assert code == 0, output  # the same file, with a working pair


def test_a_renamed_exercise_file_is_named_not_replaced(release):
    notebook_file = release / "exercises" / "attention.ipynb"
    renamed = release / "exercises" / "my_attention.ipynb"
    notebook_file.rename(renamed)
    try:
        code, output = check(release, "masking")
        assert code == 2, output
        assert "attention.ipynb is missing" in output and "my_attention.ipynb" in output, output
        assert "not implemented yet" not in output, output
    finally:
        renamed.rename(notebook_file)


def test_a_notebook_cell_that_failed_to_run_is_reported_not_its_stale_definition(capsys):
    from grader.check import notebook as kernel_checker

    namespace = {}
    exec(compile(clean_solution(), "solution", "exec"), namespace)
    failed = SimpleNamespace(info=SimpleNamespace(raw_cell="def causal_mask(context_length):\n    return (\n"),
                             error_before_exec=SyntaxError("'(' was never closed"), error_in_exec=None)
    fixed = SimpleNamespace(info=SimpleNamespace(raw_cell="def causal_mask(context_length):\n    pass\n"),
                            error_before_exec=None, error_in_exec=None)
    try:
        kernel_checker.note_cell(failed)
        kernel_checker.check("masking", namespace=namespace)
        output = capsys.readouterr().out
        assert "the cell defining causal_mask failed to run (SyntaxError" in output and "✗" in output, output
        kernel_checker.note_cell(fixed)  # the cell ran again, without error: the check reads the kernel again
        kernel_checker.check("masking", namespace=namespace)
        assert "✓ 3. masking" in capsys.readouterr().out
    finally:
        kernel_checker.FAILED_CELLS.clear()


def test_what_torch_prints_while_importing_waits_until_the_pair_is_checked(tmp_path, monkeypatch, capsys):
    """Before: PyTorch 2.2.2 under numpy 2.4.6 (measured in a venv) printed numpy's page ("A module that was
    compiled using NumPy 1.x cannot be run in NumPy 2...", a stack, a UserWarning) above the checker's one line
    with the fix. Now: the import's stderr and warnings are held back, dropped for a broken pair, and printed as
    they were when the pair works."""
    from grader.check import notebook as checker

    (tmp_path / "noisy_import.py").write_text(
        "import sys, warnings\nsys.stderr.write('A module that was compiled using NumPy 1.x cannot be run\\n')\n"
        "warnings.warn('Failed to initialize NumPy', UserWarning)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module, held, caught = checker._require_quietly("noisy_import")
    assert module.__name__ == "noisy_import" and "compiled using NumPy 1.x" in held
    assert [str(found.message) for found in caught] == ["Failed to initialize NumPy"]
    assert capsys.readouterr().err == ""  # nothing yet: a broken pair raises BrokenPackages and drops it
    with pytest.warns(UserWarning, match="Failed to initialize NumPy"):
        checker._said_again(held, caught)
    assert "compiled using NumPy 1.x" in capsys.readouterr().err
