"""strata.pyi against the compiled module: every choice's literal names in the stubs are the
names the solver accepts (strata's one table of names). mypy.stubtest, run by the test command,
checks the signatures themselves."""
import ast
import pathlib
import re

import pytest
import strata

STUBS = pathlib.Path(__file__).resolve().parents[1] / "strata.pyi"

# The stub alias of each keyword argument that takes a name.
ALIASES = {
    "geometry": "_Geometry",
    "solver": "_SolverKind",
    "backend": "_Backend",
    "smoother": "_Smoother",
    "precision": "_Precision",
    "preconditioner": "_PreconditionerKind",
    "sphere_stencil": "_SphereStencil",
    "halo": "_Halo",
}


def literal_names():
    names = {}
    for node in ast.parse(STUBS.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
            target = node.targets[0].id
            elts = node.value.slice.elts if isinstance(node.value.slice, ast.Tuple) else [node.value.slice]
            names[target] = {e.value for e in elts}
    return names


@pytest.mark.parametrize("kwarg", sorted(ALIASES))
def test_the_stubs_name_every_choice_the_solver_takes(kwarg):
    stub = literal_names()[ALIASES[kwarg]]
    kwargs = {"levels": 2, "backend": "cpu", kwarg: "no-such-name"}
    with pytest.raises(ValueError) as e:
        strata.Solver(8, 4, **kwargs)
    accepted = set(re.findall(r"'([^']+)'", str(e.value).split("must be one of", 1)[1]))
    assert stub == accepted, f"{kwarg}: stubs {sorted(stub)}, solver {sorted(accepted)}"
