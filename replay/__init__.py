"""ctrlbatch.replay: a KRaft metadata log in, the controller requests every broker would have received out."""
