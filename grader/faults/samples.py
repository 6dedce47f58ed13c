"""The bundled sample class (`samples/class/`), built from the catalogue by `make student`.

A dozen realistic submissions: correct files, typical bugs, the untouched
stub, notebooks, partial work and a file that does not parse.
"""

from collections.abc import Callable, Iterable, Mapping

from grader.chapter import STEP_KEYS
from grader.faults.bugs import BUGS
from grader.faults.variants import VARIANTS

BY_ID = {mutation.id: mutation for mutation in (*BUGS, *VARIANTS)}
Sections = Callable[[str], Mapping[str, str]]  # source -> {step key: its code} (build.exercises.code_sections)


def mutate(source: str, *ids: str) -> str:
    for mutation_id in ids:
        source = BY_ID[mutation_id].apply(source)
    return source


def with_stubs(source: str, stub: str, code_sections: Sections, keys: Iterable[str]) -> str:
    """`source` with the code of steps `keys` put back to the stub (unfinished work)."""
    done, todo = code_sections(source), code_sections(stub)
    for key in keys:
        source = source.replace(done[key], todo[key])
    return source


def sample_class(clean: str, stub: str, code_sections: Sections, notebook: Callable[[Mapping[str, str]], str]
                 ) -> dict[str, str]:
    unfinished = with_stubs(mutate(clean, "masking_hides_diagonal"), stub, code_sections,
                            STEP_KEYS[-2:])  # the chapter's last two steps not done yet
    broken = clean.replace("def context_vectors(attn_weights, values):",
                           "def context_vectors(attn_weights, values)", 1)
    return {
        "ada_lovelace.py": clean,
        "alan_turing.py": mutate(clean, "scaling_einsum_scores", "masking_torch_where", "causal_sdpa",
                                 "mha_reshape_permute"),
        "grace_hopper.ipynb": notebook(code_sections(clean)),
        "edsger_dijkstra.py": mutate(clean, "causal_softmax_dim1"),
        "barbara_liskov.py": mutate(clean, "masking_fill_result_discarded", "causal_masked_fill_not_in_place"),
        "donald_knuth.py": mutate(clean, "mha_split_view_without_transpose"),
        "margaret_hamilton.py": mutate(clean, "dropout_no_rescale", "scaling_not_scaled"),
        "john_mccarthy.py": mutate(clean, "wrapper_same_head_repeated"),
        "frances_allen.py": stub,
        "ken_thompson.py": broken,
        "radia_perlman.py": mutate(clean, "projection_key_drawn_first", "scaling_divide_by_dk"),
        "katherine_johnson.ipynb": notebook(code_sections(unfinished)),
    }


def synthetic_class(clean: str, count: int) -> dict[str, str]:
    """`count` submissions for benchmarks and resume tests: one in four correct (the clean
    solution or a variant), the rest one catalogue bug each, in a fixed order."""
    correct = [clean, *(variant.apply(clean) for variant in VARIANTS)]
    files = {}
    for index in range(count):
        if index % 4 == 0:
            source = correct[index // 4 % len(correct)]
        else:
            source = BUGS[(index - index // 4 - 1) % len(BUGS)].apply(clean)
        files[f"student_{index:03d}.py"] = source
    return files
