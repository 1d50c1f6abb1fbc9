"Property test: no reward ever raises, and every score stays in its range, over 10,000 hostile completions."
from hypothesis import given, settings, strategies as st, HealthCheck
from mathworklog.rewards import REWARD_FUNCS, REWARD_MAX

TAGS = ["<start_working_out>", "<end_working_out>", "<SOLUTION>", "</SOLUTION>", "\\boxed{", "}", "####", "<SOLUTION",
        "</SOL"]
pieces = st.one_of(
    st.sampled_from(TAGS),
    st.text(max_size=40),                                          # unicode of all kinds
    st.integers(min_value=-10**60, max_value=10**60).map(str),
    st.integers(min_value=1, max_value=3000).map(lambda n: "9" * n),  # huge numbers
    st.from_regex(r"-?\$?\d{1,3}(,\d{3}){0,4}(\.\d{1,4})?", fullmatch=True),
    st.just(""), st.just("\n"), st.just("1e400"), st.just("NaN"), st.just("inf"),
)
completion = st.one_of(
    st.lists(pieces, max_size=12).map("".join),
    st.lists(pieces, max_size=8).map(lambda p: [{"role": "assistant", "content": "".join(p)}]),
    st.none(), st.integers(), st.just([]), st.just([{"role": "assistant"}]), st.just({"content": 5}),
)
answer = st.one_of(st.none(), st.integers(-10**30, 10**30).map(str), st.text(max_size=20), st.just("#### 72"),
                   st.integers())
steps = st.one_of(st.none(), st.lists(st.one_of(st.text(max_size=6), st.integers(0, 999).map(str)), max_size=5))

@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(c=completion, a=answer, s=steps)
def test_rewards_never_raise(c, a, s):
    for f in REWARD_FUNCS:
        out = f(prompts=["p"], completions=[c], answer=[a], steps=[s])
        assert len(out) == 1 and isinstance(out[0], float)
        assert 0.0 <= out[0] <= REWARD_MAX[f.__name__] + 1e-12
