"""The student's own checker diagnoses like the grader: `python check.py STEP FILE` in a copy of the release.

For each family of mistakes of issue 13, a buggy exercise file is checked with
the public checks alone, as a student would run them: the output names the
known cause (the same fault model and rule as the grader's feedback) or, where
public inputs cannot tell the faults apart, says which property failed. It
never names another cause.
"""

import subprocess
import sys

import pytest
from grader.faults.bugs import BUGS, DEVELOPMENT_BUGS

from grader.build.exercises import clean_solution, code_sections, exercise_module, notebook, release_files
from grader.check.causes import CAUSES

pytestmark = [pytest.mark.kit,
              pytest.mark.slow(reason='`python check.py STEP FILE` in a built release, once per family of mistakes')]

BY_ID = {bug.id: bug for bug in BUGS + DEVELOPMENT_BUGS}
SHARED_HEADS = (  # one dropout mask for every head: (b, 1, n, n), broadcast over the heads
    "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
    "        attn_weights = self.dropout(attn_weights)\n"
    "\n",
    "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
    "        if self.training:\n"
    "            shape = (attn_weights.shape[0], 1, *attn_weights.shape[2:])\n"
    "            keep = torch.rand(shape, device=x.device) >= self.dropout.p\n"
    "            attn_weights = attn_weights * keep / (1 - self.dropout.p)\n"
    "\n",
)
SHARED_BATCH = (  # one dropout mask for every sequence of the batch
    "        attn_weights = self.dropout(attn_weights)\n"
    "        return attn_weights @ values\n",
    "        if self.training:\n"
    "            keep = torch.rand(attn_weights.shape[1:], device=x.device) >= self.dropout.p\n"
    "            attn_weights = attn_weights * keep / (1 - self.dropout.p)\n"
    "        return attn_weights @ values\n",
)
SHORT_MASK = (  # a mask one position short of context_length
    '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
    "        )\n"
    "\n"
    "    def forward(self, x):\n"
    "        b, num_tokens, d_in = x.shape\n"
    "        queries = self.W_query(x)\n",
    '            "mask", torch.triu(torch.ones(context_length - 1, context_length - 1), diagonal=1)\n'
    "        )\n"
    "\n"
    "    def forward(self, x):\n"
    "        b, num_tokens, d_in = x.shape\n"
    "        queries = self.W_query(x)\n",
)
PER_HEAD_OUT_PROJ = (  # out_proj on each head's context, before the merge
    "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
    "        return self.out_proj(context)\n",
    "        context = self.out_proj(attn_weights @ values)\n"
    "        return context.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n",
)

# (family, step, the edit: a catalogue fault's id or (find, replace) [, another], the cause the check must name,
# or None where public inputs cannot tell and the check must say which property failed)
FAMILIES = [
    ("dropout shared across the batch (attention_dropout)", "dropout", "dropout_mask_shared_across_batch",
     "dropout_shared_across_batch"),
    ("dropout shared across the batch (CausalAttention)", "causal_attention", SHARED_BATCH,
     "dropout_shared_across_batch"),
    ("dropout shared across the heads", "multihead_attention", SHARED_HEADS, "dropout_shared_across_heads"),
    ("dropout without the 1/(1-p) rescale", "dropout", "dropout_no_rescale", "dropout_no_rescale"),
    ("a bias although qkv_bias=False", "causal_attention", "causal_bias_always_on", "qkv_bias_forced"),
    ("scaled by d_in", "causal_attention", "causal_scales_by_d_in", "scale_d_in"),
    ("scaled by d_out", "multihead_attention", "mha_scales_by_d_out", "scale_d_out"),
    ("scaled by num_heads", "multihead_attention", "mha_scales_by_num_heads", "scale_num_heads"),
    ("scaled by d_k, the square", "scaling", "scaling_divide_by_dk", "scale_dk"),
    ("mask never sliced", "causal_attention", "causal_mask_not_sliced", "mask_not_sliced"),
    ("mask built for the wrong length", "causal_attention", SHORT_MASK, "mask_length"),
    ("heads split without the transpose", "multihead_attention", "mha_split_view_without_transpose",
     "split_no_transpose"),  # measured by the heads-layout probe (issue 27)
    ("view on a non-contiguous tensor", "multihead_attention", "mha_merge_without_contiguous", "view_not_contiguous"),
    ("output projection missing", "multihead_attention", "mha_out_proj_skipped", "no_out_proj"),
    ("output projection applied per head", "multihead_attention",
     (("        self.out_proj = nn.Linear(d_out, d_out)\n", "        self.out_proj = nn.Linear(self.head_dim, "
       "self.head_dim)\n"), PER_HEAD_OUT_PROJ), "out_proj_per_head"),
    ("softmax over the wrong axis", "causal_attention", "causal_softmax_dim1", "softmax_dim"),
    ("out-of-place fill, result thrown away", "causal_attention", "causal_masked_fill_not_in_place", "no_mask"),
]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The student release (what `make student` writes to student_template/), built from the current sources into
    a folder of its own, as a student unpacks it."""
    folder = tmp_path_factory.mktemp("release") / "attention"
    exercise = exercise_module()
    for name, text in release_files(exercise, notebook(code_sections(exercise))).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def edited(edit):
    source = clean_solution()
    if isinstance(edit, str):
        return BY_ID[edit].apply(source)
    edits = edit if isinstance(edit[0], tuple) else (edit,)
    for find, replace in edits:
        assert source.count(find) == 1, find
        source = source.replace(find, replace)
    return source


def check(release, step, source, name):
    path = release / f"{name}.py"
    path.write_text(source)
    done = subprocess.run([sys.executable, "check.py", step, path.name], cwd=release, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("family, step, edit, cause", FAMILIES, ids=[family[0] for family in FAMILIES])
def test_the_students_check_names_the_cause_or_the_property(release, family, step, edit, cause):
    code, output = check(release, step, edited(edit), "mine")
    assert code == 1, output
    others = [key for key, known in CAUSES.items() if key != cause and known.title in output]
    assert not others, f"{family}: the check names another cause: {others}\n{output}"
    if cause:
        assert CAUSES[cause].title in output, f"{family}: {cause} not named\n{output}"
    else:
        assert "what is wrong: " in output, f"{family}: no failed property stated\n{output}"


def test_the_clean_solution_passes_the_students_check(release):
    code, output = check(release, "multihead_attention", clean_solution(), "clean")
    assert code == 0, output
