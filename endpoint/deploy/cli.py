"""``voicedesk deploy``: create or update the SageMaker endpoint (fixed size, or autoscaling on open sessions); ``deploy
status | destroy | image``. boto3 loads only when a command runs."""

from __future__ import annotations

import argparse
import os
import sys

from voicedesk.endpoint.deploy.scaling import (
    CONTAINER_SESSION_CAP,
    SCALE_IN_COOLDOWN_S,
    SCALE_OUT_COOLDOWN_S,
    SESSION_CAP_ENV,
)
from voicedesk.engine.errors import UsageError
from voicedesk.engine.protocol import BIDI_PATH

DEFAULT_ENDPOINT = "voicedesk"
ROLE_ENV = "VOICEDESK_SAGEMAKER_ROLE"
ROLE_HELP = (
    "Create an execution role once (SageMaker assumes it to pull the image and write logs):\n"
    "  aws iam create-role --role-name voicedesk-sagemaker "
    "--assume-role-policy-document file://packaging/iam/execution-role-trust-policy.json\n"
    "  aws iam put-role-policy --role-name voicedesk-sagemaker --policy-name voicedesk "
    "--policy-document file://packaging/iam/execution-role-policy.json\n"
    f"then pass its ARN with --role (or {ROLE_ENV})."
)


def _common(suppress: bool) -> argparse.ArgumentParser:
    """--name/--region/--profile, accepted before or after the action (argparse would reset them otherwise)."""
    parser = argparse.ArgumentParser(add_help=False)
    default = (lambda value: argparse.SUPPRESS) if suppress else (lambda value: value)
    parser.add_argument("--name", default=default(DEFAULT_ENDPOINT), help=f"endpoint name (default {DEFAULT_ENDPOINT})")
    parser.add_argument("--region", default=default(None), help="AWS region (default: the profile's)")
    parser.add_argument("--profile", default=default(None), help="AWS profile (default: the default chain)")
    return parser


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "deploy",
        parents=[_common(suppress=False)],
        help="deploy the endpoint container to SageMaker (or: deploy status|destroy|image)",
        description="Create or update a SageMaker real-time endpoint running the voicedesk container: a new model "
        "and endpoint config each time, then create_endpoint or update_endpoint, waiting until InService; with "
        "--max-instances, Application Auto Scaling then keeps --target-sessions open sessions per instance.",
        epilog=ROLE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--image", help="ECR image URI (default ACCOUNT.dkr.ecr.REGION.amazonaws.com/voicedesk:latest)")
    parser.add_argument("--role", default=os.environ.get(ROLE_ENV), help=f"execution role ARN (or {ROLE_ENV})")
    parser.add_argument("--instance-type", default="ml.g5.xlarge", help="default ml.g5.xlarge")
    parser.add_argument("--variant", default="AllTraffic", help="production variant name (default AllTraffic)")
    parser.add_argument(
        "--inference-ami",
        default="auto",
        metavar="AMI",
        help="InferenceAmiVersion: 'auto' (default) picks al2023-ami-sagemaker-inference-gpu-4-1 (driver 580, "
        "which the image's CUDA 13.0 needs) on GPU instance types and none on CPU ones; 'none' leaves "
        "SageMaker's default",
    )
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="container environment")
    parser.add_argument(
        "--model-data",
        help="s3:// URL of a model.tar.gz with the weights (else baked into the image); the execution role "
        "reads s3://BUCKET/voicedesk/* only",
    )
    parser.add_argument("--startup-timeout", type=int, default=600, help="seconds for model load before /ping (600)")
    size = parser.add_argument_group(
        "capacity",
        "A fixed --instance-count, or autoscaling between --min-instances and --max-instances on open sessions "
        "per instance (SageMaker's ConcurrentRequestsPerModel). Measure what one instance carries with "
        "`voicedesk bench capacity --target-ms MS` (MS: the container's first-audio target, past which it refuses "
        "new requests by expected wait; set with --env VOICEDESK_FIRST_AUDIO_TARGET_MS=MS) and pass about 70 % of "
        "it as --target-sessions (docs/remote.md).",
    )
    size.add_argument("--instance-count", type=int, default=None, help="a fixed number of instances (default 1)")
    size.add_argument("--min-instances", type=int, default=None, help="autoscaling: the fewest instances (default 1)")
    size.add_argument("--max-instances", type=int, default=None, help="autoscaling: the most instances")
    size.add_argument(
        "--target-sessions",
        type=float,
        default=None,
        help="autoscaling: open sessions per instance to aim for (default: a quarter of --max-sessions)",
    )
    size.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        help=f"the container's session cap (serve --max-sessions, set as {SESSION_CAP_ENV}; default "
        f"{CONTAINER_SESSION_CAP})",
    )
    size.add_argument(
        "--scale-in-cooldown",
        type=int,
        default=SCALE_IN_COOLDOWN_S,
        help=f"seconds between removing instances (default {SCALE_IN_COOLDOWN_S}: each removal ends the "
        "sessions open on it, which reconnect elsewhere)",
    )
    size.add_argument(
        "--scale-out-cooldown",
        type=int,
        default=SCALE_OUT_COOLDOWN_S,
        help=f"seconds between adding instances (default {SCALE_OUT_COOLDOWN_S})",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the exact API calls instead of making them")
    parser.add_argument("--poll", type=float, default=30.0, help=argparse.SUPPRESS)
    parser.set_defaults(handler=run_deploy)

    actions = parser.add_subparsers(dest="deploy_action", metavar="ACTION")
    status = actions.add_parser("status", parents=[_common(suppress=True)], help="show the endpoint's state")
    status.set_defaults(handler=run_status)
    destroy = actions.add_parser("destroy", parents=[_common(suppress=True)], help="delete endpoint, config, model")
    destroy.add_argument("--dry-run", action="store_true", help="print the calls instead of making them")
    destroy.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    destroy.add_argument("--poll", type=float, default=10.0, help=argparse.SUPPRESS)
    destroy.set_defaults(handler=run_destroy)
    image = actions.add_parser("image", parents=[_common(suppress=True)], help="how to build and push the image")
    image.add_argument("--image", help="ECR image URI (default: voicedesk:latest in your account)")
    image.set_defaults(handler=run_image)


def _session(args: argparse.Namespace):  # -> boto3.Session
    import boto3
    from botocore.exceptions import BotoCoreError

    from voicedesk.engine.clients.errors import from_credentials

    try:
        session = boto3.Session(profile_name=args.profile, region_name=args.region)
    except BotoCoreError as exc:
        raise from_credentials(exc, args.profile) from exc
    if session.region_name is None:
        raise UsageError("No AWS region: pass --region or set AWS_REGION.")
    return session


def _default_image(session, args: argparse.Namespace) -> str:
    from voicedesk.endpoint.deploy import call_aws

    if getattr(args, "image", None):
        return args.image
    account = call_aws(lambda: session.client("sts").get_caller_identity()["Account"], "sts:GetCallerIdentity")
    return f"{account}.dkr.ecr.{session.region_name}.amazonaws.com/voicedesk:latest"


def _environment(pairs: list[str]) -> dict[str, str]:

    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--env takes KEY=VALUE; got {pair!r}.")
        env[key] = value
    return env


def _capacity(args: argparse.Namespace, environment: dict[str, str]):  # -> (count, ScalingSettings | None)
    from voicedesk.endpoint.deploy.scaling import ScalingSettings, check_scaling, default_target_sessions

    if args.max_sessions is not None:
        if args.max_sessions < 1:
            raise UsageError("--max-sessions must be at least 1.")
        environment[SESSION_CAP_ENV] = str(args.max_sessions)
    try:
        session_cap = int(environment.get(SESSION_CAP_ENV) or CONTAINER_SESSION_CAP)
    except ValueError:
        raise UsageError(f"{SESSION_CAP_ENV} must be a whole number; use --max-sessions N.") from None
    scales = args.max_instances is not None or args.min_instances is not None
    if not scales:
        if args.target_sessions is not None:
            raise UsageError("--target-sessions needs --max-instances (autoscaling).")
        count = 1 if args.instance_count is None else args.instance_count
        if count < 1:
            raise UsageError("--instance-count must be at least 1.")
        return count, None
    if args.instance_count is not None:
        raise UsageError(
            "Give either --instance-count (a fixed size) or --min-instances/--max-instances (autoscaling), not both.",
        )
    low = 1 if args.min_instances is None else args.min_instances
    scaling = ScalingSettings(
        min_instances=low,
        max_instances=low if args.max_instances is None else args.max_instances,
        target_sessions=default_target_sessions(session_cap) if args.target_sessions is None else args.target_sessions,
        scale_in_cooldown_s=args.scale_in_cooldown,
        scale_out_cooldown_s=args.scale_out_cooldown,
    )
    check_scaling(scaling, session_cap)
    return low, scaling


def _inference_ami(value: str) -> str | None:
    from voicedesk.endpoint.deploy import IMAGE_CUDA_AMI, INFERENCE_AMIS
    from voicedesk.endpoint.deploy.plan import AUTO_AMI

    if value == "none":
        return None
    if value != AUTO_AMI and value in INFERENCE_AMIS and value != IMAGE_CUDA_AMI:
        print(
            f"warning: {value} has {INFERENCE_AMIS[value]}; the voicedesk image needs CUDA 13.0 (driver 580, "
            f"{IMAGE_CUDA_AMI}) unless you built it for an older CUDA.",
            file=sys.stderr,
        )
    return value


def run_deploy(args: argparse.Namespace) -> int:
    from voicedesk.endpoint.deploy import Deployer, DeploySettings, check_image, deploy, new_stamp

    if not args.role:
        raise UsageError(f"voicedesk deploy needs an execution role.\n{ROLE_HELP}")
    if args.model_data and not args.model_data.startswith("s3://"):
        raise UsageError(f"--model-data takes an s3:// URL; got {args.model_data!r}.")
    environment = _environment(args.env)
    count, scaling = _capacity(args, environment)
    session = _session(args)
    image = _default_image(session, args)
    settings = DeploySettings(
        endpoint_name=args.name,
        image_uri=image,
        role_arn=args.role,
        instance_type=args.instance_type,
        instance_count=count,
        variant_name=args.variant,
        environment=environment,
        model_data_url=args.model_data,
        startup_health_check_s=args.startup_timeout,
        inference_ami=_inference_ami(args.inference_ami),
        scaling=scaling,
    )
    deployer = Deployer(
        session.client("sagemaker"), say=_say, poll_s=args.poll, autoscaling=session.client("application-autoscaling")
    )
    if not args.dry_run:
        check_image(session.client("ecr"), image, session.region_name)
    state = deploy(deployer, settings, new_stamp(), dry_run=args.dry_run)
    if state is not None:
        print(f"Endpoint {args.name} is {state.status} in {session.region_name}.")
        print(f'Try it: voicedesk say --engine sagemaker {args.name} --region {session.region_name} "Hello."')
        print("Callers need packaging/iam/caller-policy.json (with the endpoint's ARN) to invoke it.")
    return 0


def run_status(args: argparse.Namespace) -> int:
    from voicedesk.endpoint.deploy import Deployer, call_aws
    from voicedesk.endpoint.deploy.scaling import describe_scaling
    from voicedesk.engine.clients.http2 import default_endpoint_url
    from voicedesk.engine.errors import ErrorCode, VoicedeskError

    session = _session(args)
    deployer = Deployer(session.client("sagemaker"), say=_say, autoscaling=session.client("application-autoscaling"))
    state = call_aws(lambda: deployer.describe(args.name), "DescribeEndpoint")
    if state is None:
        print(f"There is no endpoint {args.name} in {session.region_name}.", file=sys.stderr)
        return 1
    print(f"Endpoint {state.name} in {session.region_name}: {state.status}")
    if state.failure_reason:
        print(f"  failure: {state.failure_reason}")
    print(f"  config {state.config_name}, model {', '.join(state.model_names) or '?'}")
    if state.instance_type:
        now = state.current_instance_count if state.current_instance_count is not None else "?"
        desired = f" (desired {state.desired_instance_count})" if state.desired_instance_count != now else ""
        print(f"  variant {state.variant_name}: {now} × {state.instance_type}{desired}")
        print(f"  host AMI: {state.inference_ami or 'SageMaker default for the instance type'}")
    try:
        for line in describe_scaling(call_aws(lambda: deployer.read_scaling(state), "DescribeScalableTargets")):
            print(f"  {line}")
    except VoicedeskError as exc:
        if exc.code != ErrorCode.UNAUTHORIZED:
            raise
        print("  autoscaling: unknown (reading it needs application-autoscaling:DescribeScalableTargets)")
    url = default_endpoint_url(session.region_name)
    print(f"  bidirectional stream: {url}/endpoints/{state.name}{BIDI_PATH}")
    if state.status == "InService":
        print(f'  try it: voicedesk say --engine sagemaker {state.name} --region {session.region_name} "Hello."')
    return 0


def run_destroy(args: argparse.Namespace) -> int:
    from voicedesk.endpoint.deploy import Deployer, destroy

    session = _session(args)
    if not args.dry_run and not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("Destroying needs --yes when not run in a terminal.")
        answer = input(
            f"Delete endpoint {args.name} in {session.region_name}, its config, model and autoscaling? [y/N] "
        )
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing deleted.")
            return 1
    deployer = Deployer(
        session.client("sagemaker"), say=_say, poll_s=args.poll, autoscaling=session.client("application-autoscaling")
    )
    destroy(deployer, args.name, dry_run=args.dry_run)
    if not args.dry_run:
        print(f"Endpoint {args.name} and its config and model are gone.")
    return 0


def run_image(args: argparse.Namespace) -> int:
    from voicedesk.endpoint.deploy import push_instructions

    session = _session(args)
    print(push_instructions(_default_image(session, args), session.region_name))
    return 0


def _say(message: str) -> None:
    print(message, flush=True)
