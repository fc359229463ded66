"""The two ways an artifact's acting graph runs: ONNX Runtime (no TensorFlow imported) and TensorFlow's SavedModel.

Both take and return {logical name: array} (names as in the manifest's `inputs` and `outputs`).
"""
import os

from btgym_aac.deploy.manifest import SAVED_MODEL_DIR, ArtifactError


class OnnxBackend:
    """The artifact's `policy.onnx` in an ONNX Runtime session on one CPU thread."""

    name = 'onnx'

    def __init__(self, folder, manifest):
        try:
            import onnxruntime
        except ImportError:
            raise ArtifactError('the onnx backend needs onnxruntime: pip install onnxruntime') from None
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(os.path.join(folder, manifest['onnx']['file']), options,
                                                    providers=['CPUExecutionProvider'])
        self.inputs = manifest['inputs']
        self.outputs = manifest['outputs']
        self.fetches = [spec['tensor'] for spec in self.outputs]

    def run(self, feeds):
        """Runs one step: {input name: array} -> {output name: array}."""
        values = self.session.run(self.fetches, {spec['tensor']: feeds[spec['name']] for spec in self.inputs})
        return {spec['name']: value for spec, value in zip(self.outputs, values)}

    def close(self):
        """Releases the session."""
        self.session = None


class SavedModelBackend:
    """The artifact's `saved_model/` loaded into a TensorFlow session (imports TensorFlow), configured as the
    package's sessions are (`session_config`: grappler's rewrites off, so the ops compute what the training graph
    computes)."""

    name = 'tf'

    def __init__(self, folder, manifest):
        from btgym_aac.algorithms.common.session_config import session_config
        from btgym_aac.compat import tf

        saved = manifest['saved_model']
        self.graph = tf.Graph()
        self.session = tf.Session(graph=self.graph, config=session_config(intra_op_parallelism_threads=1,
                                                                          inter_op_parallelism_threads=1))
        try:
            meta_graph = tf.saved_model.loader.load(self.session, [saved['tag']],
                                                    os.path.join(folder, saved.get('dir', SAVED_MODEL_DIR)))
        except (OSError, RuntimeError, tf.errors.OpError) as error:
            self.session.close()
            raise ArtifactError('the SavedModel of {!r} cannot be loaded: {}'.format(folder, error)) from None
        signature = meta_graph.signature_def[saved['signature']]
        self.inputs = {name: info.name for name, info in signature.inputs.items()}
        self.outputs = {name: info.name for name, info in signature.outputs.items()}
        self.output_names = list(self.outputs)
        self.runner = self.session.make_callable([self.outputs[name] for name in self.output_names],
                                                 [self.inputs[name] for name in self.inputs])

    def run(self, feeds):
        """Runs one step: {input name: array} -> {output name: array}."""
        values = self.runner(*[feeds[name] for name in self.inputs])
        return dict(zip(self.output_names, values))

    def close(self):
        """Closes the session."""
        self.session.close()


BACKENDS = {'onnx': OnnxBackend, 'tf': SavedModelBackend}
