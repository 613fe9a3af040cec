"""Asks PyTorch and ONNX Runtime for 16 threads and tries to widen its CPU set, then at tick 3 multiplies
matrices for half a second of wall time; its error reports what it got."""
import os
import time

import onnxruntime as ort
import torch


class Team:
    def __init__(self, team_id, env_config):
        torch.set_num_threads(16)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 16
        self.ort_options = options
        self.ort_threads = self.ort_session_threads()  # built here: an export takes longer than a tick
        try:
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
            self.widened = "allowed"
        except OSError as exc:
            self.widened = f"refused ({exc.strerror})"

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            a = torch.rand(512, 512)
            wall, cpu = time.perf_counter(), time.process_time()
            while time.perf_counter() - wall < 0.5:
                a = torch.tanh(a @ a)
            ratio = (time.process_time() - cpu) / (time.perf_counter() - wall)
            raise RuntimeError(f"threads={torch.get_num_threads()} ort_threads={self.ort_threads} cores={len(os.sched_getaffinity(0))} "
                               f"widen={self.widened} cpu_per_wall={ratio:.2f}")
        return {}

    def ort_session_threads(self):
        """The intra-op threads a session built with 16 asked for really has (the model is
        exported by torch: a policy may not import the `onnx` package itself)."""
        import io

        buffer = io.BytesIO()
        torch.onnx.export(torch.nn.Identity(), (torch.zeros(1),), buffer, dynamo=False)
        session = ort.InferenceSession(buffer.getvalue(), self.ort_options)
        return session.get_session_options().intra_op_num_threads
