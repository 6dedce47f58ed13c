"""One find/replace edit of the clean solution: a bug or a correct variant."""
from dataclasses import dataclass

from grader.markers import clean_solution


@dataclass(frozen=True)
class Mutation:
    id: str
    step: str
    cause: str  # what the edit does, in a few words
    find: str
    replace: str
    source: str = ""  # where learners write it: an issue, pull request, commit or learner file

    def apply(self, source: str | None = None) -> str:
        source = clean_solution() if source is None else source
        count = source.count(self.find)
        if count != 1:
            raise ValueError(f"{self.id}: the text to replace occurs {count} times in the clean solution")
        return source.replace(self.find, self.replace)


@dataclass(frozen=True)
class Bug(Mutation):
    diagnosis: str = ""  # the cause the feedback should name for this bug (a key of grader.check.causes.CAUSES)
    learner: str = ""  # the record of the research notes (docs/diagnosis.md) it implements, if any
