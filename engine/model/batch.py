"""One padded forward of Kokoro's ``KModel`` for several sentences (of different sessions) at once.

``KModel.forward_with_tokens`` is only right for one item (its LSTMs, norms, vocoder STFT and noise source see the
padding); this runs the model's layers with padding made harmless, so each item equals its unbatched forward within
float tolerance. ``batch_policy`` decides when it pays."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from voicedesk.engine.model.batch_policy import BatchJob, BatchMode, batching_enabled
from voicedesk.engine.model.synthesis import SynthesisResult

if TYPE_CHECKING:
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One sentence piece as ``KModel.forward`` would run it."""

    input_ids: Sequence[int]
    """Token ids including the leading and trailing 0 (``KModel.forward`` adds them)."""
    ref_s: torch.Tensor
    """The voice's style vector for this length, shape (1, 256)."""
    speed: float = 1.0


@dataclass(frozen=True, slots=True)
class BatchOutput:
    audio: torch.Tensor
    """1-D, on the CPU."""
    pred_dur: torch.Tensor
    """Frames per token (1-D, on the CPU), as ``KModel.Output.pred_dur``."""


def item_of(model: nn.Module, phonemes: str, ref_s: torch.Tensor, speed: float = 1.0) -> BatchItem:
    """The batch item ``KModel.forward(phonemes, ref_s, speed)`` would run."""
    ids = [i for i in (model.vocab.get(p) for p in phonemes) if i is not None]  # type: ignore[attr-defined]
    if len(ids) + 2 > model.context_length:  # type: ignore[attr-defined]
        raise ValueError(f"{len(ids)} phonemes are more than one forward takes ({model.context_length - 2})")  # type: ignore[attr-defined]
    return BatchItem((0, *ids, 0), ref_s, speed)


@torch.no_grad()
def forward_batch(
    model: nn.Module, items: Sequence[BatchItem], check: Callable[[], None] | None = None
) -> list[BatchOutput]:
    """Runs ``items`` as one padded forward, outputs in order; ``check`` may raise at each block to stop it."""
    if not items:
        return []
    run = _Run(model, check or (lambda: None))
    return run.forward(items)


class _Run:
    def __init__(self, model: nn.Module, check: Callable[[], None]) -> None:
        self.m = model
        self.check = check
        self.device = model.device  # type: ignore[attr-defined]

    def forward(self, items: Sequence[BatchItem]) -> list[BatchOutput]:
        m, device = self.m, self.device
        lengths = torch.tensor([len(item.input_ids) for item in items], dtype=torch.long)
        width = int(lengths.max())
        ids = torch.zeros((len(items), width), dtype=torch.long)
        for row, item in enumerate(items):
            ids[row, : len(item.input_ids)] = torch.tensor(item.input_ids, dtype=torch.long)
        ids = ids.to(device)
        text_mask = (torch.arange(width)[None, :] >= lengths[:, None]).to(device)  # True: padding
        ref_s = torch.cat([item.ref_s.reshape(1, -1) for item in items]).to(device)
        s = ref_s[:, 128:]
        speeds = torch.tensor([item.speed for item in items], dtype=torch.float32, device=device)

        bert_dur = m.bert(ids, attention_mask=(~text_mask).int())
        d_en = m.bert_encoder(bert_dur).transpose(-1, -2)
        d = m.predictor.text_encoder(d_en, s, lengths, text_mask)  # packed inside; (B, T, C), zero on padding
        x = self._lstm(m.predictor.lstm, d, lengths)
        duration = torch.sigmoid(m.predictor.duration_proj(x)).sum(dim=-1) / speeds[:, None]
        pred_dur = [torch.round(duration[row, :n]).clamp(min=1).long() for row, n in enumerate(lengths.tolist())]
        frames = torch.stack([p.sum() for p in pred_dur]).cpu()
        alignment = torch.zeros((len(items), width, int(frames.max())), device=device)
        for row, durations in enumerate(pred_dur):
            tokens = torch.repeat_interleave(torch.arange(len(durations), device=device), durations)
            alignment[row, tokens, torch.arange(len(tokens), device=device)] = 1
        en = d.transpose(-1, -2) @ alignment
        f0, noise = self._f0n(en, s, frames)
        t_en = m.text_encoder(ids, lengths, text_mask)
        asr = t_en @ alignment
        audio = self._decode(asr, f0, noise, ref_s[:, :128], frames)
        return [BatchOutput(a.reshape(-1).cpu(), p.cpu()) for a, p in zip(audio, pred_dur, strict=True)]

    # ---- the prosody side ----------------------------------------------------------------------------

    def _lstm(self, lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``lstm`` over (B, T, C) as if each row were alone: packed, zero beyond each length."""
        self.check()
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        lstm.flatten_parameters()
        out, _ = lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return out

    def _f0n(self, en: torch.Tensor, s: torch.Tensor, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        predictor = self.m.predictor
        x = self._lstm(predictor.shared, en.transpose(-1, -2), frames).transpose(-1, -2)
        curves = []
        for blocks, proj in ((predictor.F0, predictor.F0_proj), (predictor.N, predictor.N_proj)):
            h, n = x, frames
            for block in blocks:
                h, n = self._adain_resblk(block, h, s, n)
            curves.append(_mask(proj(h), n).squeeze(1))
        return curves[0], curves[1]

    # ---- the decoder ---------------------------------------------------------------------------------

    def _decode(
        self, asr: torch.Tensor, f0_curve: torch.Tensor, noise: torch.Tensor, s: torch.Tensor, frames: torch.Tensor
    ) -> list[torch.Tensor]:
        dec = self.m.decoder
        f0 = _mask(dec.F0_conv(f0_curve.unsqueeze(1)), frames)
        n_curve = _mask(dec.N_conv(noise.unsqueeze(1)), frames)
        x, n = self._adain_resblk(dec.encode, torch.cat([asr, f0, n_curve], dim=1), s, frames)
        asr_res = _mask(dec.asr_res(asr), frames)
        residual = True
        for block in dec.decode:
            if residual:
                x = torch.cat([x, asr_res, f0, n_curve], dim=1)
            x, n = self._adain_resblk(block, x, s, n)
            if block.upsample_type != "none":
                residual = False
        return self._generate(x, s, f0_curve, n)

    def _generate(
        self, x: torch.Tensor, s: torch.Tensor, f0_curve: torch.Tensor, n: torch.Tensor
    ) -> list[torch.Tensor]:
        gen = self.m.decoder.generator
        har, har_n = self._harmonics(f0_curve, n)
        for i in range(gen.num_upsamples):
            x = F.leaky_relu(x, negative_slope=0.1)
            conv = gen.noise_convs[i]
            source_n = _conv_length(har_n, conv)
            x_source = self._resblock1(gen.noise_res[i], _mask(conv(har), source_n), s, source_n)
            up = gen.ups[i]
            n = _transposed_length(n, up)
            x = _mask(up(x), n)
            if i == gen.num_upsamples - 1:
                x = gen.reflection_pad(x)
                n = n + 1
            x = _mask(x + x_source, n)
            blocks = gen.resblocks[i * gen.num_kernels : (i + 1) * gen.num_kernels]
            x = sum(self._resblock1(block, x, s, n) for block in blocks) / gen.num_kernels
        x = _mask(gen.conv_post(F.leaky_relu(x)), n)
        spec = torch.exp(x[:, : gen.post_n_fft // 2 + 1, :])
        phase = torch.sin(x[:, gen.post_n_fft // 2 + 1 :, :])
        return [
            gen.stft.inverse(spec[row : row + 1, :, :length], phase[row : row + 1, :, :length])
            for row, length in enumerate(n.tolist())
        ]

    def _harmonics(self, f0_curve: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The harmonic source per item at its exact length, in item order (it draws random numbers), padded."""
        gen = self.m.decoder.generator
        spectra = []
        for row, length in enumerate(n.tolist()):
            f0 = gen.f0_upsamp(f0_curve[row : row + 1, None, :length]).transpose(1, 2)
            har_source, _noise, _uv = gen.m_source(f0)
            har_spec, har_phase = gen.stft.transform(har_source.transpose(1, 2).squeeze(1))
            spectra.append(torch.cat([har_spec, har_phase], dim=1))
        har_n = torch.tensor([spectrum.shape[-1] for spectrum in spectra], dtype=torch.long)
        har = torch.zeros((len(spectra), spectra[0].shape[1], int(har_n.max())), device=f0_curve.device)
        for row, spectrum in enumerate(spectra):
            har[row, :, : spectrum.shape[-1]] = spectrum[0]
        return har, har_n

    # ---- blocks --------------------------------------------------------------------------------------

    def _adain_resblk(
        self, block: nn.Module, x: torch.Tensor, s: torch.Tensor, n: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``AdainResBlk1d`` with x zero beyond ``n``; returns the output (zero beyond its length) and that length."""
        self.check()
        out_n = n * 2 if block.upsample_type != "none" else n
        r = block.actv(_adain(block.norm1, x, s, n))
        r = _mask(block.pool(r), out_n)
        r = _mask(block.conv1(block.dropout(r)), out_n)
        r = block.actv(_adain(block.norm2, r, s, out_n))
        r = _mask(block.conv2(block.dropout(r)), out_n)
        shortcut = _mask(block._shortcut(x), out_n)
        return _mask((r + shortcut) * torch.rsqrt(torch.tensor(2)), out_n), out_n

    def _resblock1(self, block: nn.Module, x: torch.Tensor, s: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        """``AdaINResBlock1`` (the vocoder's Snake blocks) with x zero beyond ``n``."""
        self.check()
        for c1, c2, n1, n2, a1, a2 in zip(
            block.convs1, block.convs2, block.adain1, block.adain2, block.alpha1, block.alpha2, strict=True
        ):
            xt = _adain(n1, x, s, n)
            xt = xt + (1 / a1) * (torch.sin(a1 * xt) ** 2)
            xt = _mask(c1(xt), n)
            xt = _adain(n2, xt, s, n)
            xt = xt + (1 / a2) * (torch.sin(a2 * xt) ** 2)
            xt = _mask(c2(xt), n)
            x = xt + x
        return x


def _adain(module: nn.Module, x: torch.Tensor, s: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """``AdaIN1d`` whose instance norm takes each row's statistics over its first ``n`` steps only."""
    h = module.fc(s)
    gamma, beta = torch.chunk(h.view(h.size(0), h.size(1), 1), chunks=2, dim=1)
    norm = module.norm
    keep = _keep(n, x.shape[-1], x.device)
    count = n.to(x.device).view(-1, 1, 1).to(x.dtype)
    mean = (x * keep).sum(dim=-1, keepdim=True) / count
    var = (((x - mean) * keep) ** 2).sum(dim=-1, keepdim=True) / count
    normed = (x - mean) / torch.sqrt(var + norm.eps)
    if norm.affine:
        normed = normed * norm.weight.view(1, -1, 1) + norm.bias.view(1, -1, 1)
    return ((1 + gamma) * normed + beta) * keep


def _keep(n: torch.Tensor, width: int, device: torch.device) -> torch.Tensor:
    return (torch.arange(width, device=device)[None, :] < n.to(device)[:, None]).unsqueeze(1).float()


def _mask(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Zero beyond each row's length (B, C, T)."""
    return x * _keep(n, x.shape[-1], x.device)


def _conv_length(n: torch.Tensor, conv: nn.Conv1d) -> torch.Tensor:
    (k,), (stride,), (pad,), (dilation,) = conv.kernel_size, conv.stride, conv.padding, conv.dilation
    return torch.div(n + 2 * pad - dilation * (k - 1) - 1, stride, rounding_mode="floor") + 1


def _transposed_length(n: torch.Tensor, conv: nn.ConvTranspose1d) -> torch.Tensor:
    (k,), (stride,), (pad,), (dilation,) = conv.kernel_size, conv.stride, conv.padding, conv.dilation
    (extra,) = conv.output_padding
    return (n - 1) * stride - 2 * pad + dilation * (k - 1) + extra + 1


def synthesize_batch(
    synthesizer: KokoroSynthesizer, jobs: Sequence[BatchJob], should_stop: Callable[[], bool] | None = None
) -> list[SynthesisResult]:
    """Each job's ``SynthesisResult``, as ``synthesizer.synthesize`` would make it, from one padded forward."""
    from voicedesk.engine.errors import ErrorCode, VoicedeskError
    from voicedesk.engine.model.kokoro_synth import SynthesisInterrupted, assemble_result

    model = synthesizer.model
    items = []
    prepared_jobs = []
    for job in jobs:
        if not job.speed > 0:
            raise VoicedeskError(ErrorCode.BAD_SPEED, f"speed must be above 0; got {job.speed!r}.")
        prepared = synthesizer.prepared(job.text, job.voice, job.settings)
        _spec, pack = synthesizer.resolve_voice(job.voice)
        first = len(items)
        for piece in prepared.pieces:
            items.append(item_of(model, piece.phonemes, pack[len(piece.phonemes) - 1], job.speed * piece.rate))
        prepared_jobs.append((prepared, first))

    def check() -> None:
        if should_stop is not None and should_stop():
            raise SynthesisInterrupted("synthesis stopped: every session of the batch was cancelled")

    outputs = forward_batch(model, items, check)
    return [
        assemble_result(prepared, outputs[first : first + len(prepared.pieces)]) for prepared, first in prepared_jobs
    ]


def batch_runner(synthesizer: KokoroSynthesizer) -> Callable[[list[Any], Callable[[], bool]], list[Any]]:
    """The scheduler's batch runner: ``finish(result, seconds)`` turns each job's result into its unbatched call's."""

    def run(items: list[Any], should_stop: Callable[[], bool]) -> list[Any]:
        started = time.perf_counter()
        results = synthesize_batch(synthesizer, [job for job, _finish in items], should_stop)
        elapsed = time.perf_counter() - started
        return [finish(result, elapsed) for (_job, finish), result in zip(items, results, strict=True)]

    return run


CALIBRATION_TEXTS = (
    "Hello there, how can I help you today?",
    "The meeting moved to three o'clock.",
    "Sure.",
    "I will send the report over in a minute or two.",
)
"""Sentences of a typical mix of lengths, as several sessions' first sentences would arrive together."""


def measure_speedup(synthesizer: KokoroSynthesizer, voice: str, repeats: int = 2) -> float:
    """One-by-one time over batched time on this device (above 1: batching pays); run it on the model's thread."""
    jobs = [BatchJob(text, voice, 1.0) for text in CALIBRATION_TEXTS]
    alone = batched = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for job in jobs:
            synthesizer.synthesize(job.text, job.voice, job.speed)
        alone = min(alone, time.perf_counter() - started)
        started = time.perf_counter()
        synthesize_batch(synthesizer, jobs)
        batched = min(batched, time.perf_counter() - started)
    return alone / batched


def choose_batch_runner(
    synthesizer: KokoroSynthesizer, mode: BatchMode, voice: str
) -> tuple[Callable[[list[Any], Callable[[], bool]], list[Any]] | None, float | None]:
    """The batch runner to serve with (None: one by one) and the speed-up measured (None on a CPU)."""
    speedup = None
    if mode is BatchMode.AUTO and synthesizer.device.startswith("cuda"):
        speedup = measure_speedup(synthesizer, voice)
    enabled = batching_enabled(mode, synthesizer.device, speedup)
    return (batch_runner(synthesizer) if enabled else None), speedup
