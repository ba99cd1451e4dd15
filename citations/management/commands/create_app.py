"""Create an app (``llm_app_id``) bound to data sources; prints its id last."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from citations.llm_apps import AppError, app_create
from citations.models import App, ModelContract, ModelFallback, Reasoning
from documents.models import Organization


class Command(BaseCommand):
    help = "Create a question-answering app over data sources and print its id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--organization", required=True)
        parser.add_argument(
            "--data-source",
            action="append",
            required=True,
            dest="data_sources",
            help="repeat for several data sources",
        )
        parser.add_argument("--public", action="store_true", help="answer without an API key")
        parser.add_argument(
            "--generator",
            choices=App.Generator.values,
            default=App.Generator.EXTRACTIVE,
            help="who writes the answer (default: extractive, offline)",
        )
        parser.add_argument("--model", default="", help="the model of an LLM generator")
        parser.add_argument("--system-prompt", default="", help="instructions for the model")
        parser.add_argument("--temperature", type=float, default=None)
        parser.add_argument("--max-output-tokens", type=int, default=None)
        parser.add_argument(
            "--reasoning",
            choices=Reasoning.values,
            default=Reasoning.SINGLE,
            help="steps: answer a question that asks several things step by step",
        )
        parser.add_argument(
            "--model-contract",
            choices=ModelContract.values,
            default=ModelContract.AUTO,
            help="the form an OpenAI-compatible model answers in (default auto)",
        )
        parser.add_argument(
            "--model-fallback",
            choices=ModelFallback.values,
            default=ModelFallback.EXTRACTIVE,
            help="when the model cannot give a verified answer: answer extractively "
            "(default) or fail",
        )
        parser.add_argument(
            "--model-timeout", type=int, default=None, help="seconds for a whole model reply"
        )
        parser.add_argument(
            "--model-first-token-timeout",
            type=int,
            default=None,
            help="seconds until the model's first token",
        )
        parser.add_argument(
            "--model-connect-timeout", type=int, default=None, help="seconds to connect"
        )

    def handle(self, *args: object, **options: Any) -> None:
        organization = Organization.objects.filter(name=options["organization"]).first()
        if organization is None:
            raise CommandError(f"unknown organization {options['organization']!r}")
        try:
            app = app_create(
                organization=organization,
                name=str(options["name"]),
                data_source_names=list(options["data_sources"]),
                is_public=bool(options["public"]),
                generator=str(options["generator"]),
                model=str(options["model"]),
                prompt=str(options["system_prompt"]),
                temperature=options["temperature"],
                max_output_tokens=options["max_output_tokens"],
                reasoning=str(options["reasoning"]),
                model_settings={
                    "model_contract": options["model_contract"],
                    "model_fallback": options["model_fallback"],
                    "model_timeout_seconds": options["model_timeout"],
                    "model_first_token_seconds": options["model_first_token_timeout"],
                    "model_connect_seconds": options["model_connect_timeout"],
                },
            )
        except AppError as exc:
            raise CommandError(str(exc)) from exc
        visibility = "public" if app.is_public else "private"
        writer = f"{app.generator} {app.model}".strip()
        self.stdout.write(
            f"created {visibility} app {app.name!r} over {', '.join(options['data_sources'])}"
            f", answers by {writer}" + (" in steps" if app.reasoning == Reasoning.STEPS else "")
        )
        self.stdout.write(str(app.pk))
