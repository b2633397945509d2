"""The card doctor: advice from reported misroutes, checked by replay (issue 31)."""
