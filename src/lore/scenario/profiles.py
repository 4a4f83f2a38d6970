"""Named prompt profiles (system prompt, user template, output rules), chosen risk > intent > default.

Scenario variables (`assistant_name`, `business_domain`, `support_contact`, and the scenario's own
`[variables]`) are injected into the templates; unknown placeholders stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lore.answer.prompt import system_prompt
from lore.scenario.config import Scenario

RISK_PROFILES = {"pricing": "guarded", "contract": "guarded", "privacy": "privacy"}
INTENT_PROFILES = {"procedure": "steps", "lookup": "facts", "comparison": "compare"}
DEFAULT_PROFILE = "default"
USER_TEMPLATE = "Passages:\n\n{passages}\n\n<question>\n{question}\n</question>"


@dataclass(frozen=True)
class PromptProfile:
    """One profile: what the model is told, how the user turn is laid out, rules for the output."""

    name: str
    system: str
    user_template: str = USER_TEMPLATE
    output_rules: tuple[str, ...] = ()
    notice: str = ""  # shown with every answer of this profile (e.g. the approval reminder)


@dataclass
class ChosenProfile:
    """A profile with the scenario variables filled in, and why it was chosen."""

    name: str
    reason: str
    system: str
    user_template: str
    notice: str

    def to_json(self) -> dict[str, str | None]:
        return {"name": self.name, "reason": self.reason, "notice": self.notice or None}


PROFILES: dict[str, PromptProfile] = {
    p.name: p
    for p in (
        PromptProfile("default", "You answer questions about {business_domain} for {scenario_name}."),
        PromptProfile(
            "steps",
            "You explain {business_domain} procedures for {scenario_name}.",
            output_rules=(
                "Give the steps as a numbered list, in order, each step cited.",
                "Name who approves each step and any deadline the passages state.",
            ),
        ),
        PromptProfile(
            "facts",
            "You look up exact figures about {business_domain} for {scenario_name}.",
            output_rules=(
                "State the exact figure, unit and condition as the passages give them.",
                "If the figure depends on a condition (grade, city, tenure), list each case.",
            ),
        ),
        PromptProfile(
            "compare",
            "You compare options about {business_domain} for {scenario_name}.",
            output_rules=("Compare the options point by point; cite each point.",),
        ),
        PromptProfile(
            "guarded",
            "You answer questions about prices, budgets, contracts and approvals for "
            "{scenario_name}. These answers bind the company, so be exact and conservative.",
            output_rules=(
                (
                    "Never promise a price, discount, budget exception or contract term that the "
                    "passages do not state word for word."
                ),
                "Never suggest a way around an approval; always state the approval process.",
                "End by saying that binding answers come from {support_contact}.",
            ),
            notice="价格、预算、合同与审批以正式流程为准，如需确认请联系 {support_contact}。 / Prices, "
            "budgets, contracts and approvals follow the official process; confirm with "
            "{support_contact}.",
        ),
        PromptProfile(
            "privacy",
            "You answer questions that touch personal data for {scenario_name}.",
            output_rules=(
                "Never reveal personal data about a named or identifiable person.",
                "Explain the official channel for personal-data requests: {support_contact}.",
            ),
            notice="涉及个人信息的问题请通过正式渠道办理：{support_contact}。 / Personal-data requests go "
            "through {support_contact}.",
        ),
    )
}


def scenario_profiles(scenario: Scenario) -> dict[str, PromptProfile]:
    """The built-in profiles with the scenario's `[profiles.<name>]` wording put in."""
    table = dict(PROFILES)
    for name, text in scenario.profiles.items():
        given = {k: v for k, v in text.model_dump().items() if v is not None}
        if "output_rules" in given:
            given["output_rules"] = tuple(given["output_rules"])
        table[name] = replace(table[name], **given)
    return table


class _Vars(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def choose_profile(
    risk: str | None, intent: str, variables: dict[str, str], profiles: dict[str, PromptProfile] | None = None
) -> ChosenProfile:
    """Risk category first, then the intent, then the default; variables injected."""
    table = profiles or PROFILES
    if risk:
        name, reason = RISK_PROFILES[risk], f"risk: {risk}"
    elif intent in INTENT_PROFILES:
        name, reason = INTENT_PROFILES[intent], f"intent: {intent}"
    else:
        name, reason = DEFAULT_PROFILE, "default"
    p = table[name]
    v = _Vars(variables)
    rules = [r.format_map(v) for r in p.output_rules]
    base = system_prompt(v.get("assistant_name", "Lore"))
    extra = "\n".join(f"{i}. {r}" for i, r in enumerate(rules, start=6))
    system = p.system.format_map(v) + "\n" + base + ("\n" + extra if extra else "")
    return ChosenProfile(name, reason, system, p.user_template, p.notice.format_map(v))
