"""Streamlit widgets, plotly figure builders and small pure helpers shared by the pages."""
