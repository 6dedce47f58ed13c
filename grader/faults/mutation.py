"""One find/replace edit of the clean solution: a bug or a correct variant."""
from dataclasses import dataclass

from grader.build.markers import clean_solution

@dataclass(frozen=True)
class Mutation:
    id: str
    step: str
    cause: str
    find: str
    replace: str

    def apply(self, source=None):
        source = clean_solution() if source is None else source
        count = source.count(self.find)
        if count != 1:
            raise ValueError(f"{self.id}: the text to replace occurs {count} times in the clean solution")
        return source.replace(self.find, self.replace)
