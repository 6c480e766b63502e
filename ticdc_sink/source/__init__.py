"""Reading TiCDC topics into Spark: the ``ticdc`` format's readers (``reader.py``), their options, the DataFrame
they give (``layout.py``), the driver's view of the topics and a task's read of one partition."""
